import { availableParallelism } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { mapperServerInfo } from '../model/protocol-mapper-types.js';
import type { ServerContext } from '../context.js';
import { unsupportedMediaType } from '../model/errors.js';
import { authenticateAdmin } from './authenticate-admin.js';
import { requireRoutePermission, routePermission } from './route-permissions.js';
import { builtInProviders, consoleServerInfo } from './server-info.js';
import { attackDetectionRoutes } from './attack-detection.js';
import { authenticationRoutes } from './authentication.js';
import { clientCertificateRoutes } from './client-certificates.js';
import { clientRoutes } from './clients.js';
import { clientEvaluateRoutes } from './client-evaluate.js';
import { clientPolicyRoutes } from './client-policies.js';
import { clientRegistrationAdminRoutes } from './client-registration.js';
import { clientScopeLinkRoutes } from './client-scope-links.js';
import { clientScopeRoutes } from './client-scopes.js';
import { componentRoutes } from './components.js';
import { identityProviderRoutes } from './identity-providers.js';
import { federatedIdentityRoutes } from './federated-identities.js';
import { eventRoutes } from './events.js';
import { groupRoutes } from './groups.js';
import { impersonationRoutes } from './impersonation.js';
import { keyRoutes } from './keys.js';
import { sessionRoutes } from './sessions.js';
import { revocationRoutes } from './revocation.js';
import { clientNodeRoutes } from './client-nodes.js';
import { clientInstallationRoutes } from './client-installation.js';
import { userActionEmailRoutes } from './user-action-emails.js';
import { userProfileRoutes } from './user-profile.js';
import { organizationGroupRoutes } from './organization-groups.js';
import { organizationRoutes } from './organizations.js';
import { organizationInvitationRoutes } from './organization-invitations.js';
import { providerAdminRoutes } from './provider-resources.js';
import { realmRoutes } from './realms.js';
import { realmRoleRoutes } from './roles.js';
import { uiExtensionRoutes } from './ui-ext.js';
import { localizationRoutes } from './localization.js';
import { userRoutes } from './users.js';

export { permissionTable } from './route-permissions.js';
export { adminConsoleRoutes } from './console.js';

/** The Keycloak-compatible admin REST API under /admin: every route authenticated before it runs. */
export async function adminApi(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  await app.register(
    async (admin) => {
      // Every route declares what it requires (route-permissions.ts); one that does not stops start-up.
      admin.addHook('onRoute', (route) => {
        for (const method of [route.method].flat()) {
          // A provider's admin route requires the role it declares (provider-resources.ts).
          if (method !== 'HEAD' && !route.config?.providerAdminRole && !routePermission(method, route.url)) throw new Error(`admin route ${method} ${route.url} has no entry in route-permissions.ts`);
        }
      });
      admin.addHook('onRequest', async (request) => {
        request.adminAuth = await authenticateAdmin(ctx, request);
        // The admin API consumes JSON only, as Keycloak's resources do. The form and text parsers are there for
        // other endpoints; without this, such a body would reach handlers that ignore bodies (a DELETE would proceed).
        const type = request.headers['content-type'];
        const hasBody = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
        const { textPlainBody, multipartBody, formBody } = request.routeOptions.config;
        const accepted = textPlainBody
          ? /^(application\/json|text\/plain)\s*(;|$)/i
          : multipartBody
            ? /^(application\/json|multipart\/form-data)\s*(;|$)/i
            : formBody
              ? /^(application\/json|multipart\/form-data|application\/x-www-form-urlencoded)\s*(;|$)/i
              : /^application\/json\s*(;|$)/i;
        if (hasBody && type !== undefined && !accepted.test(type)) {
          throw unsupportedMediaType(`The admin API accepts application/json bodies only${multipartBody ? ' (and multipart/form-data here)' : ''}`);
        }
      });
      // The door: every route is let in as its entry in the table says, after its body is read (a malformed body is
      // still a 400, an unknown realm a 404), before its handler runs.
      admin.addHook('preHandler', async (request) => requireRoutePermission(ctx, request));
      // Versions, memory and the installed providers are for administrators, not for any signed-in user (the table).
      admin.get('/serverinfo', async () => {
        const spi: Record<string, string> = { 'event-listener': 'eventsListener', 'form-action': 'form-action', 'form-protector': 'form-protector', 'realm-resource': 'realm-restapi-extension' };
        const providers: Record<string, { internal: boolean; providers: Record<string, { order: number; operationalInfo?: Record<string, string> }> }> = builtInProviders();
        for (const entry of ctx.providers.list()) {
          const name = spi[entry.factory.kind];
          providers[name] ??= { internal: false, providers: {} };
          providers[name].providers[entry.factory.id] = {
            order: 0,
            operationalInfo: { package: entry.packageName, version: entry.version, builtin: String(entry.builtin), displayName: entry.factory.displayName ?? entry.factory.id },
          };
        }
        return {
          systemInfo: { version: ctx.version, serverTime: new Date().toISOString(), uptime: `${Math.round(process.uptime())} seconds`, javaVersion: process.version, osName: process.platform },
          memoryInfo: { used: process.memoryUsage().heapUsed, total: process.memoryUsage().heapTotal },
          // Keycloak's cpuInfo: the processors this process may use.
          cpuInfo: { processorCount: availableParallelism() },
          providers,
          ...mapperServerInfo(),
          realmgateProviders: ctx.providers.list().map((e) => ({ id: e.factory.id, kind: e.factory.kind, package: e.packageName, version: e.version, builtin: e.builtin })),
          // The admin console's keys (themes, componentTypes, enums, features, cryptoInfo, …): admin/server-info.ts.
          ...consoleServerInfo(ctx),
        };
      });
      const scoped = async (realms: FastifyInstance) => {
        realmRoutes(realms, ctx);
        clientRoutes(realms, ctx);
        clientRegistrationAdminRoutes(realms, ctx);
        clientPolicyRoutes(realms, ctx);
        clientCertificateRoutes(realms, ctx);
        clientScopeRoutes(realms, ctx);
        clientScopeLinkRoutes(realms, ctx);
        userRoutes(realms, ctx);
        groupRoutes(realms, ctx);
        realmRoleRoutes(realms, ctx);
        organizationRoutes(realms, ctx);
        organizationGroupRoutes(realms, ctx);
        organizationInvitationRoutes(realms, ctx);
        eventRoutes(realms, ctx);
        keyRoutes(realms, ctx);
        componentRoutes(realms, ctx);
        identityProviderRoutes(realms, ctx);
        federatedIdentityRoutes(realms, ctx);
        sessionRoutes(realms, ctx);
        revocationRoutes(realms, ctx);
        clientNodeRoutes(realms, ctx);
        clientInstallationRoutes(realms, ctx);
        userActionEmailRoutes(realms, ctx);
        impersonationRoutes(realms, ctx);
        clientEvaluateRoutes(realms, ctx);
        userProfileRoutes(realms);
        authenticationRoutes(realms, ctx);
        attackDetectionRoutes(realms, ctx);
        providerAdminRoutes(realms, ctx);
        uiExtensionRoutes(realms, ctx);
        localizationRoutes(realms, ctx);
      };
      await admin.register(scoped);
    },
    { prefix: '/admin' },
  );
}
