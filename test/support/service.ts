/** A real service for API tests: SQLite in a temp folder, or a fresh database on the test PostgreSQL. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../src/clock';
import { loadConfig, type Config } from '../../src/config';
import { buildApp } from '../../src/app';
import { createService, type Service, type ServiceOptions } from '../../src/service';
import { NO_LOAD } from '../../src/jobs/load';
import { checkAnswers } from './contract';

export type Backend = 'sqlite' | 'postgres';
export const BACKENDS: Backend[] = ['sqlite', 'postgres'];

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS script of the repository's
const { freshDatabase } = require('../../scripts/throwaway-pg.js') as {
  freshDatabase: (server: string) => Promise<string>;
};

/** Makes an empty database on the test cluster and returns its URL. */
export async function freshPostgres(): Promise<string> {
  const server = process.env.PAPERLINK_TEST_PG;
  if (!server) throw new Error('PAPERLINK_TEST_PG is not set: jest globalSetup starts PostgreSQL');
  return freshDatabase(server);
}

export interface TestService {
  service: Service;
  app: FastifyInstance;
  config: Config;
  /** A live API key. */
  key: string;
  /** Stops the app, closes the database and removes the data folder. */
  stop(): Promise<void>;
  /** Stops this service, keeping its data, and starts a new one over the same data, as after a restart. */
  restart(): Promise<TestService>;
}

export interface TestOptions {
  backend?: Backend;
  config?: Partial<Config>;
  clock?: Clock;
  /** More options for the service (kept over restarts). */
  service?: ServiceOptions;
}

async function start(
  config: Config,
  clock: Clock | undefined,
  key?: string,
  more: ServiceOptions = {},
): Promise<TestService> {
  // renders never wait for the event loop to calm down (./load.ts measures wall time)
  const service = await createService(config, { clock, runFlows: true, load: NO_LOAD, ...more });
  const app = await buildApp(service, { logger: false });
  await app.ready();
  // every answer the tests receive is checked against /openapi.json
  checkAnswers(app);
  const secret = key ?? (await service.keys.create('api', 'test key')).secret;
  const close = async () => {
    await app.close();
    await service.close();
  };
  return {
    service,
    app,
    config,
    key: secret,
    stop: async () => {
      await close();
      fs.rmSync(config.dataDir, { recursive: true, force: true });
    },
    restart: async () => {
      await close();
      return start(config, clock, secret, more);
    },
  };
}

/** Starts a service; it is stopped after the test file. */
export async function testService(options: TestOptions = {}): Promise<TestService> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-api-'));
  const databaseUrl = options.backend === 'postgres' ? await freshPostgres() : undefined;
  const config = loadConfig(
    {},
    { dataDir, databaseUrl, logLevel: 'silent', logFormat: 'json', port: 0, ...options.config },
  );
  return start(config, options.clock, undefined, options.service);
}

/** The Cookie header of a web app session signed in with `secret` (fails unless the sign-in redirects, as it does when it works). */
export async function webSession(app: FastifyInstance, secret: string): Promise<string> {
  const signed = await signInToWebApp(app, secret);
  if (signed.statusCode !== 303) throw new Error(`sign-in answered ${signed.statusCode}: ${signed.body}`);
  return signed.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
}

/** Signs in to the web app with `secret` as a browser would (the sign-in form and its CSRF cookie); the answer. */
export async function signInToWebApp(app: FastifyInstance, secret: string) {
  const form = await app.inject({ method: 'GET', url: '/app/signin' });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)![1];
  return app.inject({
    method: 'POST',
    url: '/app/signin',
    headers: {
      cookie: form.cookies.map((c) => `${c.name}=${c.value}`).join('; '),
      'content-type': 'application/x-www-form-urlencoded',
    },
    payload: new URLSearchParams({ secret, _csrf: csrf, next: '/app' }).toString(),
  });
}

/** Sends a postcard request to the intake with `token` and `fields`; its id (the answer must be 202). */
export async function sendPostcard(
  app: FastifyInstance,
  token: string,
  fields: Record<string, string>,
): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/postcards',
    headers: { 'content-type': 'application/json' },
    payload: { api_token: token, ...fields },
  });
  if (res.statusCode !== 202) throw new Error(`the intake answered ${res.statusCode}: ${res.body}`);
  return res.json<{ id: string }>().id;
}
