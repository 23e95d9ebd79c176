export { accountLinkHash, authBindingOf, dropProgress, keepProgress, newUpstreamState, openProgress, rememberUpstream, takeUpstream, type BrokerProgress, type PendingUpstream } from './broker-state.js';
export { brokeredIdentityOf, linkFirstLogin, linkedUser, updateLinkedUser } from './broker-login.js';
export { BROKER_AUTHENTICATOR_IDS, runFirstBrokerLogin, type BrokerChallenge, type BrokerFailure } from './first-login.js';
export { IDP_MAPPER_TYPES } from './idp-mappers.js';
export { canLink, canSignIn, identityProviderRedirector, type RedirectChallenge } from './redirector.js';
export { authorizationRequest, completeUpstreamLogin, OIDC_PROVIDER_IDS, UpstreamError, type BrokeredIdentity } from './upstream-oidc.js';
export { completeBrokerLogin, providerDisplayName, SIGN_IN_PROVIDER_IDS, SOCIAL_PROVIDERS, upstreamAuthorizationRequest } from './social-providers.js';
export { idpMapperTypes } from './idp-mapper-types.js';
export { configFromMetadata, configFromMetadataUrl, ImportConfigError } from './import-config.js';
