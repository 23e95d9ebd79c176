import type { Kysely, Migration } from 'kysely';

/** Authentication flows, their executions and authenticator configs; everything goes with its realm. */
export const flowsMigration: Migration = {
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
};
