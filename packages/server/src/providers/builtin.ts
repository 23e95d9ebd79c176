import type { EventListenerFactory, Logger, ProviderFactory } from '@realmgate/spi';

/** Keycloak's default listener (same id, so imported realms keep working): events to the log. */
function loggingListener(): EventListenerFactory {
  let logger: Logger;
  return {
    kind: 'event-listener',
    id: 'jboss-logging',
    displayName: 'Logging',
    init(context) {
      logger = context.logger;
    },
    create: () => ({
      // It logs ids only.
      readsUser: false,
      onEvent(event) {
        const fields = { type: event.type, realm: event.realmName, clientId: event.clientId, userId: event.userId, ipAddress: event.ipAddress, error: event.error };
        if (event.error) logger.warn('event', fields);
        else logger.debug('event', fields);
      },
      onAdminEvent(event) {
        logger.debug('admin event', { operation: event.operationType, resourceType: event.resourceType, resourcePath: event.resourcePath, realm: event.realmName });
      },
    }),
  };
}

export function builtinProviders(): ProviderFactory[] {
  return [loggingListener()];
}
