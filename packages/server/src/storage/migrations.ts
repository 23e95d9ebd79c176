import { randomUUID } from 'node:crypto';
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { CLIENT_REGISTRATION_POLICY_TYPE, defaultRegistrationPolicies } from '../model/client-registration.js';

// One ordered set for SQLite and PostgreSQL: only portable column types (text, integer, bigint).
export const migrations: Record<string, Migration> = {
  '0001-core': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('realm')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('display_name', 'text')
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('registration_allowed', 'integer', (c) => c.notNull())
        .addColumn('reset_password_allowed', 'integer', (c) => c.notNull())
        .addColumn('verify_email', 'integer', (c) => c.notNull())
        .addColumn('login_with_email_allowed', 'integer', (c) => c.notNull())
        .addColumn('duplicate_emails_allowed', 'integer', (c) => c.notNull())
        .addColumn('delete_account_allowed', 'integer', (c) => c.notNull())
        .addColumn('organizations_enabled', 'integer', (c) => c.notNull())
        .addColumn('events_enabled', 'integer', (c) => c.notNull())
        .addColumn('events_expiration', 'bigint')
        .addColumn('admin_events_enabled', 'integer', (c) => c.notNull())
        .addColumn('admin_events_details_enabled', 'integer', (c) => c.notNull())
        .addColumn('events_listeners', 'text', (c) => c.notNull())
        .addColumn('enabled_event_types', 'text', (c) => c.notNull())
        .addColumn('smtp_server', 'text', (c) => c.notNull())
        .addColumn('browser_flow', 'text', (c) => c.notNull())
        .addColumn('registration_flow', 'text', (c) => c.notNull())
        .addColumn('reset_credentials_flow', 'text', (c) => c.notNull())
        .addColumn('access_token_lifespan', 'integer', (c) => c.notNull())
        .addColumn('sso_session_idle_timeout', 'integer', (c) => c.notNull())
        .addColumn('sso_session_max_lifespan', 'integer', (c) => c.notNull())
        .addColumn('attributes', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('realm_key')
        .addColumn('kid', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('algorithm', 'text', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('active', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('realm_key_realm').on('realm_key').column('realm_id').execute();

      await db.schema
        .createTable('client')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('description', 'text')
        .addColumn('secret', 'text')
        .addColumn('public_client', 'integer', (c) => c.notNull())
        .addColumn('bearer_only', 'integer', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('protocol', 'text', (c) => c.notNull())
        .addColumn('root_url', 'text')
        .addColumn('base_url', 'text')
        .addColumn('redirect_uris', 'text', (c) => c.notNull())
        .addColumn('web_origins', 'text', (c) => c.notNull())
        .addColumn('service_accounts_enabled', 'integer', (c) => c.notNull())
        .addColumn('standard_flow_enabled', 'integer', (c) => c.notNull())
        .addColumn('direct_access_grants_enabled', 'integer', (c) => c.notNull())
        .addColumn('implicit_flow_enabled', 'integer', (c) => c.notNull())
        .addColumn('full_scope_allowed', 'integer', (c) => c.notNull())
        .addColumn('attributes', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('client_realm_client_id', ['realm_id', 'client_id'])
        .execute();

      await db.schema
        .createTable('user_entity')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('username', 'text', (c) => c.notNull())
        .addColumn('email', 'text')
        .addColumn('email_verified', 'integer', (c) => c.notNull())
        .addColumn('first_name', 'text')
        .addColumn('last_name', 'text')
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('created_timestamp', 'bigint', (c) => c.notNull())
        .addColumn('attributes', 'text', (c) => c.notNull())
        .addColumn('service_account_client_id', 'text', (c) => c.references('client.id').onDelete('cascade'))
        .addColumn('password_hash', 'text')
        .addColumn('password_created', 'bigint')
        .addUniqueConstraint('user_realm_username', ['realm_id', 'username'])
        .execute();
      await db.schema.createIndex('user_realm_email').on('user_entity').columns(['realm_id', 'email']).execute();

      await db.schema
        .createTable('role')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('container_id', 'text', (c) => c.notNull())
        .addColumn('client_role', 'integer', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addUniqueConstraint('role_container_name', ['container_id', 'name'])
        .execute();
      await db.schema.createIndex('role_realm').on('role').column('realm_id').execute();

      await db.schema
        .createTable('role_composite')
        .addColumn('parent_id', 'text', (c) => c.notNull().references('role.id').onDelete('cascade'))
        .addColumn('child_id', 'text', (c) => c.notNull().references('role.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('role_composite_pk', ['parent_id', 'child_id'])
        .execute();

      await db.schema
        .createTable('user_role')
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addColumn('role_id', 'text', (c) => c.notNull().references('role.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('user_role_pk', ['user_id', 'role_id'])
        .execute();

      await db.schema
        .createTable('organization')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('alias', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('redirect_url', 'text')
        .addColumn('attributes', 'text', (c) => c.notNull())
        .addUniqueConstraint('organization_realm_name', ['realm_id', 'name'])
        .addUniqueConstraint('organization_realm_alias', ['realm_id', 'alias'])
        .execute();

      await db.schema
        .createTable('organization_domain')
        .addColumn('organization_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
        .addColumn('realm_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('verified', 'integer', (c) => c.notNull())
        .addUniqueConstraint('organization_domain_realm_name', ['realm_id', 'name'])
        .execute();

      await db.schema
        .createTable('organization_member')
        .addColumn('organization_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('organization_member_pk', ['organization_id', 'user_id'])
        .execute();

      await db.schema
        .createTable('user_session')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addColumn('ip_address', 'text')
        .addColumn('started', 'bigint', (c) => c.notNull())
        .addColumn('last_refresh', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('user_session_user').on('user_session').column('user_id').execute();

      await db.schema
        .createTable('client_session')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('session_id', 'text', (c) => c.notNull().references('user_session.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('client.id').onDelete('cascade'))
        .addColumn('refresh_token_id', 'text')
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('started', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('client_session_session_client', ['session_id', 'client_id'])
        .execute();

      await db.schema
        .createTable('revoked_token')
        .addColumn('jti', 'text', (c) => c.primaryKey())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('event_entity')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('client_id', 'text')
        .addColumn('user_id', 'text')
        .addColumn('session_id', 'text')
        .addColumn('ip_address', 'text')
        .addColumn('error', 'text')
        .addColumn('details', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('event_realm_time').on('event_entity').columns(['realm_id', 'time']).execute();

      await db.schema
        .createTable('admin_event_entity')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('operation_type', 'text', (c) => c.notNull())
        .addColumn('resource_type', 'text', (c) => c.notNull())
        .addColumn('resource_path', 'text', (c) => c.notNull())
        .addColumn('representation', 'text')
        .addColumn('auth_realm_id', 'text')
        .addColumn('auth_client_id', 'text')
        .addColumn('auth_user_id', 'text')
        .addColumn('auth_ip_address', 'text')
        .addColumn('error', 'text')
        .execute();
      await db.schema
        .createIndex('admin_event_realm_time')
        .on('admin_event_entity')
        .columns(['realm_id', 'time'])
        .execute();
    },
  },
  // Authentication flows, their executions and authenticator configs; everything goes with its realm.
  '0002-flows': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('auth_flow')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('alias', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('provider_id', 'text', (c) => c.notNull())
        .addColumn('top_level', 'integer', (c) => c.notNull())
        .addColumn('built_in', 'integer', (c) => c.notNull())
        .addUniqueConstraint('auth_flow_realm_alias', ['realm_id', 'alias'])
        .execute();

      await db.schema
        .createTable('authenticator_config')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('alias', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addUniqueConstraint('authenticator_config_realm_alias', ['realm_id', 'alias'])
        .execute();

      await db.schema
        .createTable('auth_execution')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('parent_flow_id', 'text', (c) => c.notNull().references('auth_flow.id').onDelete('cascade'))
        .addColumn('authenticator', 'text')
        .addColumn('sub_flow_id', 'text', (c) => c.references('auth_flow.id').onDelete('cascade'))
        .addColumn('requirement', 'text', (c) => c.notNull())
        .addColumn('priority', 'integer', (c) => c.notNull())
        .addColumn('authenticator_config_id', 'text', (c) => c.references('authenticator_config.id').onDelete('set null'))
        .execute();
      await db.schema.createIndex('auth_execution_realm').on('auth_execution').column('realm_id').execute();
      await db.schema.createIndex('auth_execution_parent').on('auth_execution').column('parent_flow_id').execute();
      await db.schema.createIndex('auth_execution_authenticator').on('auth_execution').column('authenticator').execute();
    },
  },
  '0003-scope-mappings': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('scope_mapping')
        .addColumn('client_id', 'text', (c) => c.notNull().references('client.id').onDelete('cascade'))
        .addColumn('role_id', 'text', (c) => c.notNull().references('role.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('scope_mapping_pk', ['client_id', 'role_id'])
        .execute();
    },
  },
  '0004-realm-key-certificate': {
    async up(db: Kysely<any>) {
      // Keys created before this get their certificate the first time they are listed (keys/index.ts).
      await db.schema.alterTable('realm_key').addColumn('certificate', 'text').execute();
    },
  },
  '0005-refresh-and-offline-sessions': {
    async up(db: Kysely<any>) {
      // Keycloak 26's defaults: refresh tokens may be reused, offline sessions idle out after 30 days.
      const realmColumns: [string, number][] = [
        ['revoke_refresh_token', 0],
        ['refresh_token_max_reuse', 0],
        ['offline_session_idle_timeout', 2592000],
        ['offline_session_max_lifespan_enabled', 0],
        ['offline_session_max_lifespan', 5184000],
      ];
      for (const [name, value] of realmColumns) {
        await db.schema.alterTable('realm').addColumn(name, 'integer', (c) => c.notNull().defaultTo(value)).execute();
      }
      await db.schema.alterTable('user_session').addColumn('offline', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema
        .createTable('refresh_token_family')
        .addColumn('client_session_id', 'text', (c) => c.notNull().references('client_session.id').onDelete('cascade'))
        .addColumn('reuse_id', 'text', (c) => c.notNull())
        .addColumn('used_token', 'text', (c) => c.notNull())
        .addColumn('uses', 'integer', (c) => c.notNull())
        .addColumn('latest_token', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('refresh_token_family_pk', ['client_session_id', 'reuse_id'])
        .execute();
    },
  },
  // The realm's password policy, and the earlier hashes its passwordHistory rule compares with.
  '0006-password-history': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('realm').addColumn('password_policy', 'text', (c) => c.notNull().defaultTo('')).execute();
      await db.schema
        .createTable('password_history')
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('password_history_user').on('password_history').columns(['user_id', 'created_at']).execute();
    },
  },
  // The client_credentials grant finds the client's service-account user by this column; without an index that
  // scanned every user of every realm (npm run bench -- 'data scale': 0.01 of the 100-user rate at a million users).
  '0007-user-service-account-index': {
    async up(db: Kysely<any>) {
      await db.schema.createIndex('user_service_account').on('user_entity').column('service_account_client_id').execute();
    },
  },
  // Second factors: a user's OTP credentials (Keycloak's CredentialRepresentation shape; the password stays in
  // user_entity) and the required actions an administrator set on a user (CONFIGURE_TOTP, UPDATE_PASSWORD).
  '0008-credentials-and-required-actions': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('credential')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('user_label', 'text')
        .addColumn('secret_data', 'text', (c) => c.notNull())
        .addColumn('credential_data', 'text', (c) => c.notNull())
        .addColumn('created_date', 'bigint', (c) => c.notNull())
        .addColumn('priority', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('credential_user').on('credential').columns(['user_id', 'type']).execute();
      await db.schema
        .createTable('user_required_action')
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addColumn('required_action', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('user_required_action_pk', ['user_id', 'required_action'])
        .execute();
    },
  },
  // Groups (Keycloak's): a tree per realm, its role mappings, its members and the realm's default groups. A top-level
  // group has parent_id '' (not NULL), so the unique (realm_id, parent_id, name) refuses duplicate siblings at
  // every level, top level too. Subgroups are deleted by the repository (parent_id is not a foreign key).
  '0010-groups': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('realm_group')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('parent_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('attributes', 'text', (c) => c.notNull())
        .addUniqueConstraint('realm_group_sibling_name', ['realm_id', 'parent_id', 'name'])
        .execute();
      // The ancestor walk of token role resolution follows parent_id from a group's id (the primary key).
      await db.schema
        .createTable('user_group')
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addColumn('group_id', 'text', (c) => c.notNull().references('realm_group.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('user_group_pk', ['user_id', 'group_id'])
        .execute();
      await db.schema.createIndex('user_group_group').on('user_group').columns(['group_id', 'user_id']).execute();
      await db.schema
        .createTable('group_role')
        .addColumn('group_id', 'text', (c) => c.notNull().references('realm_group.id').onDelete('cascade'))
        .addColumn('role_id', 'text', (c) => c.notNull().references('role.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('group_role_pk', ['group_id', 'role_id'])
        .execute();
      await db.schema.createIndex('group_role_role').on('group_role').column('role_id').execute();
      await db.schema
        .createTable('default_group')
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('group_id', 'text', (c) => c.notNull().references('realm_group.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('default_group_pk', ['realm_id', 'group_id'])
        .execute();
    },
  },
  // Providers' durable outboxes (SPI OutboxStore; the webhook extension's outbox mode): the items, each attempt,
  // and the per-endpoint pause state. provider_outbox_due serves the claim (per endpoint, due_at order); provider_outbox_order
  // the per-order-key check (no earlier unfinished item); provider_outbox_list the admin queries; _updated the purge (provider_outbox_finished since 0021).
  '0009-provider-outbox': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('provider_outbox')
        .addColumn('provider_id', 'text', (c) => c.notNull())
        .addColumn('id', 'text', (c) => c.notNull())
        .addColumn('seq', 'bigint', (c) => c.notNull())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('endpoint', 'text', (c) => c.notNull())
        .addColumn('endpoint_label', 'text')
        .addColumn('order_key', 'text')
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('label', 'text')
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('total_attempts', 'integer', (c) => c.notNull())
        .addColumn('max_attempts', 'integer', (c) => c.notNull())
        .addColumn('due_at', 'bigint', (c) => c.notNull())
        .addColumn('claimed_by', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('last_status', 'integer')
        .addColumn('last_error', 'text')
        .addPrimaryKeyConstraint('provider_outbox_pk', ['provider_id', 'id'])
        .execute();
      // Partial: only unfinished rows, so delivered ones kept for the retention period never slow the claim.
      const unfinished = sql<boolean>`state in ('pending', 'sending')`;
      await db.schema.createIndex('provider_outbox_due').on('provider_outbox').columns(['provider_id', 'endpoint', 'due_at', 'seq']).where(unfinished).execute();
      await db.schema.createIndex('provider_outbox_order').on('provider_outbox').columns(['provider_id', 'endpoint', 'order_key', 'seq']).where(unfinished).execute();
      await db.schema.createIndex('provider_outbox_list').on('provider_outbox').columns(['provider_id', 'realm_id', 'created_at']).execute();
      await db.schema.createIndex('provider_outbox_updated').on('provider_outbox').columns(['provider_id', 'updated_at']).execute();
      await db.schema
        .createTable('provider_outbox_attempt')
        .addColumn('provider_id', 'text', (c) => c.notNull())
        .addColumn('item_id', 'text', (c) => c.notNull())
        .addColumn('number', 'integer', (c) => c.notNull())
        .addColumn('node', 'text', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('status', 'integer')
        .addColumn('error', 'text')
        .addColumn('response_excerpt', 'text')
        .addPrimaryKeyConstraint('provider_outbox_attempt_pk', ['provider_id', 'item_id', 'number'])
        .addForeignKeyConstraint('provider_outbox_attempt_item', ['provider_id', 'item_id'], 'provider_outbox', ['provider_id', 'id'], (c) => c.onDelete('cascade'))
        .execute();
      await db.schema
        .createTable('provider_outbox_endpoint')
        .addColumn('provider_id', 'text', (c) => c.notNull())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('endpoint', 'text', (c) => c.notNull())
        .addColumn('paused', 'integer', (c) => c.notNull())
        .addColumn('consecutive_failures', 'integer', (c) => c.notNull())
        .addColumn('paused_at', 'bigint')
        .addColumn('reason', 'text')
        .addColumn('hold_until', 'bigint')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('provider_outbox_endpoint_pk', ['provider_id', 'realm_id', 'endpoint'])
        .execute();
    },
  },
  // Client scopes (Keycloak's): a realm's named bundles of protocol mappers and role scope mappings; the realm's
  // default/optional lists new clients start from; each client's default/optional scopes. A protocol mapper belongs
  // to a client scope or to a client (owner_id is the one it belongs to, so the unique (owner_id, name) refuses
  // duplicate names per owner; the two nullable foreign keys delete it with its owner). `default_scope` 1 is a
  // default scope, 0 an optional one: a scope is linked once, as one or the other.
  '0011-client-scopes': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('client_scope')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('protocol', 'text', (c) => c.notNull())
        .addColumn('attributes', 'text', (c) => c.notNull())
        .addUniqueConstraint('client_scope_realm_name', ['realm_id', 'name'])
        .execute();
      await db.schema
        .createTable('protocol_mapper')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('client_scope_id', 'text', (c) => c.references('client_scope.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.references('client.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('protocol', 'text', (c) => c.notNull())
        .addColumn('mapper_type', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addUniqueConstraint('protocol_mapper_owner_name', ['owner_id', 'name'])
        .execute();
      await db.schema.createIndex('protocol_mapper_scope').on('protocol_mapper').column('client_scope_id').execute();
      await db.schema.createIndex('protocol_mapper_client').on('protocol_mapper').column('client_id').execute();
      await db.schema
        .createTable('realm_client_scope')
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('scope_id', 'text', (c) => c.notNull().references('client_scope.id').onDelete('cascade'))
        .addColumn('default_scope', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('realm_client_scope_pk', ['realm_id', 'scope_id'])
        .execute();
      await db.schema
        .createTable('client_client_scope')
        .addColumn('client_id', 'text', (c) => c.notNull().references('client.id').onDelete('cascade'))
        .addColumn('scope_id', 'text', (c) => c.notNull().references('client_scope.id').onDelete('cascade'))
        .addColumn('default_scope', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('client_client_scope_pk', ['client_id', 'scope_id'])
        .execute();
      await db.schema.createIndex('client_client_scope_scope').on('client_client_scope').column('scope_id').execute();
      await db.schema
        .createTable('client_scope_role')
        .addColumn('scope_id', 'text', (c) => c.notNull().references('client_scope.id').onDelete('cascade'))
        .addColumn('role_id', 'text', (c) => c.notNull().references('role.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('client_scope_role_pk', ['scope_id', 'role_id'])
        .execute();
      await db.schema.createIndex('client_scope_role_role').on('client_scope_role').column('role_id').execute();
    },
  },
  // Identity providers, their mappers and components (Keycloak's), kept as data: Realmgate signs nobody in through
  // them (README). An identity provider's alias is unique per realm; the rest of Keycloak's representation is kept
  // as JSON in `representation`. A mapper belongs to its provider by internal id, so a renamed alias keeps them. A
  // component's parent is its realm's id or another component's (LDAP mappers under their LDAP provider): the
  // repository deletes sub-components with their parent; the realm's foreign key deletes them all with the realm.
  '0014-identity-providers-and-components': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('identity_provider')
        .addColumn('internal_id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('alias', 'text', (c) => c.notNull())
        .addColumn('provider_id', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('display_name', 'text')
        .addColumn('representation', 'text', (c) => c.notNull())
        .addUniqueConstraint('identity_provider_realm_alias', ['realm_id', 'alias'])
        .execute();
      await db.schema
        .createTable('identity_provider_mapper')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('identity_provider_id', 'text', (c) => c.notNull().references('identity_provider.internal_id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('mapper_type', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addUniqueConstraint('identity_provider_mapper_name', ['identity_provider_id', 'name'])
        .execute();
      await db.schema
        .createTable('component')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('parent_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('provider_id', 'text', (c) => c.notNull())
        .addColumn('provider_type', 'text', (c) => c.notNull())
        .addColumn('sub_type', 'text')
        .addColumn('config', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('component_realm_parent_type').on('component').columns(['realm_id', 'parent_id', 'provider_type']).execute();
    },
  },
  // The user search's prefix and exact forms (storage/users.ts, Keycloak's `search` syntax) from indexes. SQLite
  // compares ranges of username and email on the indexes it has, and of the names on lower() indexes; PostgreSQL
  // answers LIKE 'prefix%' only from text_pattern_ops indexes (whatever the database's collation).
  '0013-user-search-indexes': {
    async up(db: Kysely<any>) {
      if (db.getExecutor().adapter instanceof PostgresAdapter) {
        for (const [name, expression] of [['username', 'username'], ['email', 'email'], ['first_name', 'lower(first_name)'], ['last_name', 'lower(last_name)']]) {
          await sql.raw(`create index user_search_${name} on user_entity (realm_id, (${expression}) text_pattern_ops)`).execute(db);
        }
      } else {
        for (const name of ['first_name', 'last_name']) await sql.raw(`create index user_search_${name} on user_entity (realm_id, lower(${name}))`).execute(db);
      }
    },
  },
  // A realm's settings of each required action (Keycloak's RequiredActionProviderRepresentation: enabled, default
  // action, priority). A row exists once an administrator changed an action; one without a row has its defaults.
  '0016-realm-required-actions': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('realm_required_action')
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('alias', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('default_action', 'integer', (c) => c.notNull())
        .addColumn('priority', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('realm_required_action_pk', ['realm_id', 'alias'])
        .execute();
    },
  },
  '0017-password-label': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('user_entity').addColumn('password_label', 'text').execute();
    },
  },
  // Users' links to accounts at identity providers (Keycloak's FederatedIdentityRepresentation), kept as data: one
  // per user and provider. A link names its provider by internal id, so renaming the alias keeps it and deleting
  // the provider deletes it (as Keycloak does); it goes with its user and its realm.
  '0018-federated-identities': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('federated_identity')
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addColumn('identity_provider_id', 'text', (c) => c.notNull().references('identity_provider.internal_id').onDelete('cascade'))
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('federated_user_id', 'text', (c) => c.notNull())
        .addColumn('federated_username', 'text')
        .addPrimaryKeyConstraint('federated_identity_pk', ['user_id', 'identity_provider_id'])
        .execute();
      // The provider's links (its deletion cascades through them), and a federated account's user.
      await db.schema.createIndex('federated_identity_provider').on('federated_identity').columns(['identity_provider_id', 'federated_user_id']).execute();
    },
  },
  // Required actions kept as data (issue 16): a realm file's actions this server does not carry out (Keycloak's
  // TERMS_AND_CONDITIONS, webauthn-register, …) get a row of realm_required_action like its own, with what
  // Keycloak's RequiredActionProviderRepresentation has besides: name, providerId, config (JSON). Null on the rows
  // of the server's own actions means "its own name, providerId = alias, no config". One table, so the realm's
  // actions are one list, ordered by priority across all of them, an alias once whatever it names.
  '0019-required-actions-kept-as-data': {
    async up(db: Kysely<any>) {
      // One column per statement: SQLite adds one at a time.
      for (const column of ['name', 'provider_id', 'config']) await db.schema.alterTable('realm_required_action').addColumn(column, 'text').execute();
    },
  },
  // The last parts of a Keycloak realm file that were named in `notImported` (issue 16), now kept: a client's
  // authenticationFlowBindingOverrides (JSON, flow ids; honoured by the sign-in) and authorizationSettings (JSON,
  // kept as data). Null means none, so existing rows need no rewrite. Users' consents to clients (Keycloak's
  // clientConsents: granted client scopes by name, dates), one per user and client, going with either. A realm's
  // localization texts (Keycloak's localizationTexts and /localization API): a text per realm, locale and key.
  '0020-kept-import-parts': {
    async up(db: Kysely<any>) {
      // One column per statement: SQLite adds one at a time.
      for (const column of ['flow_binding_overrides', 'authorization_settings']) await db.schema.alterTable('client').addColumn(column, 'text').execute();
      await db.schema
        .createTable('user_consent')
        .addColumn('user_id', 'text', (c) => c.notNull().references('user_entity.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('client.id').onDelete('cascade'))
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('granted_client_scopes', 'text', (c) => c.notNull())
        .addColumn('created_date', 'bigint')
        .addColumn('last_updated_date', 'bigint')
        .addPrimaryKeyConstraint('user_consent_pk', ['user_id', 'client_id'])
        .execute();
      // A client's consents (its deletion cascades through them).
      await db.schema.createIndex('user_consent_client').on('user_consent').column('client_id').execute();
      await db.schema
        .createTable('realm_localization')
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('locale', 'text', (c) => c.notNull())
        .addColumn('message_key', 'text', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('realm_localization_pk', ['realm_id', 'locale', 'message_key'])
        .execute();
    },
  },
  // The outbox's purge index holds finished rows only: a delivery's claim, retries and lease renewals (unfinished,
  // updated_at changing each time) no longer rewrite an index entry the purge never reads.
  '0021-outbox-finished-index': {
    async up(db: Kysely<any>) {
      await db.schema.dropIndex('provider_outbox_updated').execute();
      await db.schema
        .createIndex('provider_outbox_finished')
        .on('provider_outbox')
        .columns(['provider_id', 'updated_at'])
        .where(sql<boolean>`state in ('delivered', 'dead')`)
        .execute();
    },
  },
  // The SSO cookie is a sealed token bound to its session by a random value only the browser sign-in knows (issue
  // 33): the session keeps the value's hash. Sessions from before have none, so their bare-id cookies sign nobody in.
  '0022-sso-cookie-hash': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('user_session').addColumn('sso_cookie_hash', 'text').execute();
    },
  },
  // Required actions as providers (issue 35). A registry provider an administrator unregisters keeps a row marked
  // `registered` 0 (the other rows, and providers without a row, are registered). Keycloak 26's default priorities
  // differ from the ones this server had (CONFIGURE_TOTP 54, was 10; UPDATE_PASSWORD 57, was 30): a provider
  // without a row takes the new default by itself. A row of these two is rewritten only when every stored row of
  // the four original actions still holds its old default (the row was written when something else of it changed),
  // so a realm whose order an administrator or a realm file set keeps every priority it has.
  '0023-required-action-registry': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('realm_required_action').addColumn('registered', 'integer').execute();
      const old: Record<string, number> = { CONFIGURE_TOTP: 10, UPDATE_PASSWORD: 30, UPDATE_PROFILE: 40, VERIFY_EMAIL: 50 };
      const renewed: Record<string, number> = { CONFIGURE_TOTP: 54, UPDATE_PASSWORD: 57 };
      const rows: { realm_id: string; alias: string; priority: number }[] = await db
        .selectFrom('realm_required_action')
        .select(['realm_id', 'alias', 'priority'])
        .where('alias', 'in', Object.keys(old))
        .execute();
      const realms = new Map<string, { alias: string; priority: number }[]>();
      for (const row of rows) realms.set(row.realm_id, [...(realms.get(row.realm_id) ?? []), row]);
      for (const [realmId, own] of realms) {
        if (!own.every((row) => old[row.alias] === Number(row.priority))) continue;
        for (const row of own) {
          if (renewed[row.alias] === undefined) continue;
          await db.updateTable('realm_required_action').set({ priority: renewed[row.alias] }).where('realm_id', '=', realmId).where('alias', '=', row.alias).execute();
        }
      }
    },
  },
  // Brokering (issue 37): the upstream's token response of a link, for a provider that stores tokens (storeToken,
  // read back by GET /realms/{r}/broker/{alias}/token). Keycloak keeps it on the federated identity too.
  '0024-federated-identity-token': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('federated_identity').addColumn('token', 'text').execute();
    },
  },
  // Keycloak's clientAuthenticatorType (issue 39): before this, every client was client-secret whatever it was given.
  '0025-client-authenticator-type': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('client').addColumn('authenticator_type', 'text').execute();
    },
  },
  // Realm keys as Keycloak's key-provider components (issue 39): one row per component and key, of any type. Rows
  // from before are rsa-generated RS256 signing keys of priority 100, enabled, their component id their kid (nulls).
  '0026-key-providers': {
    async up(db: Kysely<any>) {
      for (const [column, type] of [['component_id', 'text'], ['provider_id', 'text'], ['name', 'text'], ['priority', 'integer'], ['enabled', 'integer'], ['key_use', 'text'], ['settings', 'text']] as const) {
        await db.schema.alterTable('realm_key').addColumn(column, type).execute();
      }
      // One key per component: two nodes making the same fallback key at once keep one.
      await db.schema.createIndex('realm_key_component').unique().on('realm_key').column('component_id').execute();
    },
  },
  // Keycloak's frontchannelLogout (issue 40): before this every client answered true whatever it was given. Null is true.
  '0027-client-frontchannel-logout': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('client').addColumn('frontchannel_logout', 'integer').execute();
    },
  },
  // Dynamic client registration (issue 40, item 7): initial access tokens and registration access tokens (hashes
  // only), and Keycloak's default client registration policies for every realm that has none (new realms get them at
  // creation: services/realm-provisioning.ts).
  '0028-client-registration': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('client_initial_access')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expiration', 'integer', (c) => c.notNull())
        .addColumn('count', 'integer', (c) => c.notNull())
        .addColumn('remaining_count', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('client_initial_access_realm').on('client_initial_access').column('realm_id').execute();
      await db.schema
        .createTable('client_registration_token')
        .addColumn('client_id', 'text', (c) => c.primaryKey().references('client.id').onDelete('cascade'))
        .addColumn('realm_id', 'text', (c) => c.notNull().references('realm.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull())
        .addColumn('registration_auth', 'text', (c) => c.notNull())
        .execute();
      const realms: { id: string }[] = await db.selectFrom('realm').select('id').execute();
      const having = new Set(
        (await db.selectFrom('component').select('realm_id').where('provider_type', '=', CLIENT_REGISTRATION_POLICY_TYPE).execute()).map((r: { realm_id: string }) => r.realm_id),
      );
      for (const realm of realms) {
        if (having.has(realm.id)) continue;
        for (const policy of defaultRegistrationPolicies()) {
          await db
            .insertInto('component')
            .values({ id: randomUUID(), realm_id: realm.id, parent_id: realm.id, name: policy.name, provider_id: policy.providerId, provider_type: CLIENT_REGISTRATION_POLICY_TYPE, sub_type: policy.subType, config: JSON.stringify(policy.config) })
            .execute();
        }
      }
    },
  },
  // Keycloak's client adminUrl and notBefore (issue 41: logout-all and push-revocation). The representation showed a
  // client's root URL as its adminUrl (Keycloak's default at creation); older clients keep that as their stored one.
  '0029-client-admin-url-not-before': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('client').addColumn('admin_url', 'text').execute();
      await db.schema.alterTable('client').addColumn('not_before', 'integer').execute();
      await db.updateTable('client').set((eb: any) => ({ admin_url: eb.ref('root_url') })).execute();
    },
  },
  // Brokering (issue 37): Keycloak 26's built-in `browser` flow has `identity-provider-redirector` (ALTERNATIVE)
  // between auth-cookie and the forms; realms created before it was built in get it here, once, only where their
  // browser flow is still as it was built: top-level and built in, its steps auth-cookie then the `forms` sub-flow,
  // both ALTERNATIVE, and no redirector. An administrator's changed requirements, or an imported file's own shape,
  // are left as they are (a flow an administrator made is never built in). The steps become 10, 20, 30 as a new
  // realm's.
  '0030-browser-flow-idp-redirector': {
    async up(db: Kysely<any>) {
      const flows: { id: string; realm_id: string }[] = await db.selectFrom('auth_flow').select(['id', 'realm_id']).where('alias', '=', 'browser').where('top_level', '=', 1).where('built_in', '=', 1).execute();
      for (const flow of flows) {
        const steps: { id: string; authenticator: string | null; sub_flow_id: string | null; requirement: string; alias: string | null }[] = await db
          .selectFrom('auth_execution')
          .leftJoin('auth_flow', 'auth_flow.id', 'auth_execution.sub_flow_id')
          .select(['auth_execution.id as id', 'auth_execution.authenticator as authenticator', 'auth_execution.sub_flow_id as sub_flow_id', 'auth_execution.requirement as requirement', 'auth_flow.alias as alias'])
          .where('auth_execution.parent_flow_id', '=', flow.id)
          .orderBy('auth_execution.priority')
          .execute();
        const [cookie, forms] = steps;
        const asBuilt =
          steps.length === 2 &&
          cookie.authenticator === 'auth-cookie' && cookie.sub_flow_id === null && cookie.requirement === 'ALTERNATIVE' &&
          forms.sub_flow_id !== null && forms.alias === 'forms' && forms.requirement === 'ALTERNATIVE';
        if (!asBuilt) continue;
        await db.updateTable('auth_execution').set({ priority: 10 }).where('id', '=', cookie.id).execute();
        await db.updateTable('auth_execution').set({ priority: 30 }).where('id', '=', forms.id).execute();
        await db
          .insertInto('auth_execution')
          .values({ id: randomUUID(), realm_id: flow.realm_id, parent_flow_id: flow.id, authenticator: 'identity-provider-redirector', sub_flow_id: null, requirement: 'ALTERNATIVE', priority: 20, authenticator_config_id: null })
          .execute();
      }
    },
  },
  // Brokering (issue 37): which upstream session and user a brokered sign-in's session came from (Keycloak's
  // brokerSessionId, brokerUserId), so an upstream's back-channel logout token can end it.
  '0031-user-session-broker': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('user_session').addColumn('broker_session_id', 'text').execute();
      await db.schema.alterTable('user_session').addColumn('broker_user_id', 'text').execute();
      await db.schema.createIndex('user_session_broker_session').on('user_session').columns(['realm_id', 'broker_session_id']).execute();
      await db.schema.createIndex('user_session_broker_user').on('user_session').columns(['realm_id', 'broker_user_id']).execute();
    },
  },
  // Issue 41: the password credential's id kept across resets, as Keycloak updates its credential in place. Existing
  // passwords keep the id they were shown with (derived from their creation time) until they are next set.
  '0032-password-credential-id': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('user_entity').addColumn('password_credential_id', 'text').execute();
    },
  },
  // Issue 40: the upstream's ID token of a brokered sign-in whose identity provider has `backchannelSupported`
  // (Keycloak's FEDERATED_ID_TOKEN session note), sent as `id_token_hint` when this server logs the upstream out.
  '0033-user-session-broker-id-token': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('user_session').addColumn('broker_id_token', 'text').execute();
    },
  },
  // Issue 41: an organization's invitations (Keycloak's OrganizationInvitationModel): whom the e-mail went to, when
  // it was sent and until when its link is good; the row goes when the invitation is accepted, deleted or resent.
  '0034-organization-invitation': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('organization_invitation')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('organization_id', 'text', (c) => c.notNull().references('organization.id').onDelete('cascade'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('first_name', 'text')
        .addColumn('last_name', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('invite_link', 'text')
        .execute();
      await db.schema.createIndex('organization_invitation_org_email').on('organization_invitation').columns(['organization_id', 'email']).execute();
    },
  },
  // Issue 41: organization groups (Keycloak's OrganizationGroupsResource) are rows of realm_group with the
  // organization's id; a top-level one has parent_id = that id (so siblings stay unique per organization, apart from
  // the realm's top level). The realm's group listings, a user's groups, tokens and roles read only the rows without one.
  '0035-organization-groups': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('realm_group').addColumn('organization_id', 'text', (c) => c.references('organization.id').onDelete('cascade')).execute();
      await db.schema.createIndex('realm_group_organization').on('realm_group').columns(['organization_id']).execute();
    },
  },
  // Issue 41: the password credential's place among the user's credentials (Keycloak's credential priority, 10 for a
  // password), so the console's Credentials tab can move it (moveToFirst, moveAfter) as the other credentials.
  '0036-password-priority': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('user_entity').addColumn('password_priority', 'integer', (c) => c.notNull().defaultTo(10)).execute();
    },
  },
  // Issue 41: Keycloak's registered cluster nodes of a client (the console's Clients → Advanced → Registered cluster
  // nodes), JSON `{host: epoch seconds of its registration}`; null: none.
  '0037-client-registered-nodes': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('client').addColumn('registered_nodes', 'text').execute();
    },
  },
  // Keycloak's consentRequired (the consent screen): before this every client was refused it. Null is false.
  '0038-client-consent-required': {
    async up(db: Kysely<any>) {
      await db.schema.alterTable('client').addColumn('consent_required', 'integer').execute();
    },
  },
  // Issue 44: only a brokered sign-in's session has an upstream session or user, yet the two indexes of 0031 took a
  // (realm, NULL) entry for every other session too (every password grant's), each a B-tree page written per
  // commit. Partial now: `byBroker` compares the column with `=`, which implies IS NOT NULL, so both databases
  // still use them (test/storage-sessions.test.ts asks each planner).
  '0039-user-session-broker-partial-indexes': {
    async up(db: Kysely<any>) {
      for (const [index, column] of [
        ['user_session_broker_session', 'broker_session_id'],
        ['user_session_broker_user', 'broker_user_id'],
      ] as const) {
        await db.schema.dropIndex(index).execute();
        await db.schema
          .createIndex(index)
          .on('user_session')
          .columns(['realm_id', column])
          .where(sql.ref(column), 'is not', null)
          .execute();
      }
    },
  },
};
