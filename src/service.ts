/**
 * The composition root: opens the database (running migrations), picks the document storage and
 * wires the core together. The HTTP app, the CLI and the tests all start from here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { systemClock, type Clock } from './clock';
import type { Config } from './config';
import { openDatabase, type Database } from './db';
import { Documents } from './documents';
import { Idempotency } from './idempotency';
import { Keys } from './keys';
import { packageRoot } from './paths';
import { DatabaseStorage, FileStorage, type Storage } from './storage';
import { TemplateStore } from './templates/store';

export interface Service {
  config: Config;
  clock: Clock;
  database: Database;
  storage: Storage;
  keys: Keys;
  templates: TemplateStore;
  documents: Documents;
  idempotency: Idempotency;
  version: string;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface ServiceOptions {
  clock?: Clock;
  /** Load the example templates on the first start (default true). */
  examples?: boolean;
}

export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

export async function createService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const clock = options.clock ?? systemClock;
  const database = await openDatabase({ databaseUrl: config.databaseUrl, sqlitePath: path.join(config.dataDir, 'paperlink.db') });
  const { db } = database;
  const storage: Storage = config.storage === 'database' ? new DatabaseStorage(db) : new FileStorage(path.join(config.dataDir, 'documents'));
  const templates = new TemplateStore(db, clock);
  if (options.examples !== false) await templates.loadExamples();
  return {
    config,
    clock,
    database,
    storage,
    keys: new Keys(db, clock),
    templates,
    documents: new Documents(db, storage, templates, clock),
    idempotency: new Idempotency(db, clock),
    version: packageVersion(),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => database.close(),
  };
}
