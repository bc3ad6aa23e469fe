/**
 * The error answer's classes: each PaperlinkError answers with its class's status and its own code
 * from the catalogue, and a start's failure (StartupError) that reaches a request is the server's
 * fault, a 500 internal_error that says nothing of it, not a client error in a code no client can act on.
 */
import Fastify from 'fastify';
import { ConfigError } from '../../src/config';
import { ConflictError, ERROR_CODES, NotFoundError, ValidationError } from '../../src/errors';
import { errorHandler } from '../../src/http/errors';

async function answerTo(err: Error) {
  const app = Fastify({ logger: false });
  app.setErrorHandler(errorHandler(1024 * 1024));
  app.get('/fail', async () => {
    throw err;
  });
  const res = await app.inject({ method: 'GET', url: '/fail' });
  await app.close();
  return { status: res.statusCode, code: res.json<{ error: { code: string } }>().error.code };
}

it.each([
  [new ValidationError('no', [], 'missing_variables'), 422, 'missing_variables'],
  [new NotFoundError('document', 'doc_x'), 404, 'not_found'],
  [new ConflictError('settings_busy', 'again'), 409, 'settings_busy'],
])('%p answers with its status and its code from the catalogue', async (err, status, code) => {
  const answer = await answerTo(err);
  expect(answer).toEqual({ status, code });
  expect(ERROR_CODES[status as keyof typeof ERROR_CODES] as readonly string[]).toContain(code);
});

it("answers a start's failure during a request as the server's fault: 500 internal_error", async () => {
  expect(await answerTo(new ConfigError('LINK_TOKEN_KEYS holds no key.'))).toEqual({
    status: 500,
    code: 'internal_error',
  });
});
