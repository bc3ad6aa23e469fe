/**
 * `paperlink keys` (API keys) and `paperlink tokens` (credentials of every kind: postcard tokens and
 * API keys): create, list and revoke.
 */
import type { Command } from 'commander';
import { ValidationError } from '../errors';
import { ALL_SCOPES, type KeyKind } from '../keys';
import { DATA_DIR_HELP, EXIT_OK, table, withService, type Io, type SetExit } from './shared';

export function addKeysCommands(program: Command, io: Io, setExit: SetExit): void {
  credentialCommands(
    program.command('keys').description('Create, list and revoke API keys (sent in the X-Service-API-Token header).'),
    'api',
    'API key',
    io,
    setExit,
  );
  credentialCommands(
    program
      .command('tokens')
      .description('Credentials of every kind: postcard tokens (the api_token of postcard requests) and API keys.'),
    undefined,
    'token',
    io,
    setExit,
  );
}

function kindOf(k: string): KeyKind {
  if (k !== 'postcard' && k !== 'api')
    throw new ValidationError('--kind is postcard or api.', [{ field: '--kind', message: 'must be postcard or api' }]);
  return k;
}

/**
 * create, list and revoke under `parent`: `keys` always works on API keys; `tokens` takes
 * --kind (postcard by default).
 */
function credentialCommands(parent: Command, fixed: KeyKind | undefined, what: string, io: Io, setExit: SetExit): void {
  const withKind = (c: Command) => (fixed ? c : c.option('-k, --kind <kind>', 'postcard or api', 'postcard'));
  const kind = (opts: { kind?: string }) => fixed ?? kindOf(opts.kind ?? 'postcard');
  const createHint = (k: KeyKind) =>
    fixed ? 'npx paperlink keys create --name NAME' : `npx paperlink tokens create --kind ${k} --name NAME`;
  withKind(parent.command('create'))
    .description(`Make a new ${what} and print it. It is shown only this once; only its hash is stored.`)
    .requiredOption('-n, --name <name>', 'who or what uses it, e.g. "n8n production" or "website form"')
    .option(
      '-s, --scope <scopes...>',
      `API keys: what it may do, space- or comma-separated (default: everything): ${ALL_SCOPES.join(', ')}`,
    )
    .option(
      '--test',
      'postcard tokens: a test token (plp_test_…); its postcards are rendered and proofed, never handed on to a mail partner',
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (opts: { name: string; kind?: string; dataDir?: string; scope?: string[]; test?: boolean }) => {
      const scopes = opts.scope?.flatMap((x) => x.split(','));
      const { secret, key } = await withService(io, opts, (s) =>
        s.keys.create(kind(opts), opts.name, scopes, { test: opts.test }),
      );
      io.stdout(`${secret}\n`);
      io.stderr(
        `Created ${key.kind === 'api' ? 'key' : `${key.test ? 'test ' : ''}${key.kind} token`} ${key.id} (${key.name})${key.kind === 'api' ? ` with the scopes ${key.scopes.join(', ')}` : ''}. Keep it secret: it cannot be shown again.\n`,
      );
      setExit(EXIT_OK);
    });
  withKind(parent.command('list'))
    .description(`List ${what}s: name, prefix, scopes (API keys), created, last used, revoked.`)
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .option('--json', 'print JSON')
    .action(async (opts: { kind?: string; dataDir?: string; json?: boolean }) => {
      const k = kind(opts);
      const list = await withService(io, opts, (s) => s.keys.list(k));
      if (opts.json) io.stdout(`${JSON.stringify(list, null, 2)}\n`);
      else if (!list.length)
        io.stdout(`No ${k === 'api' ? 'API keys' : `${k} tokens`} yet. Make one with: ${createHint(k)}\n`);
      else
        io.stdout(
          table([
            ['ID', 'NAME', 'PREFIX', ...(k === 'api' ? ['SCOPES'] : []), 'CREATED', 'LAST USED', 'REVOKED'],
            ...list.map((x) => [
              x.id,
              x.name,
              x.prefix,
              ...(k === 'api' ? [x.scopes.length === ALL_SCOPES.length ? 'all' : x.scopes.join(',')] : []),
              x.created_at,
              x.last_used_at ?? 'never',
              x.revoked_at ?? '',
            ]),
          ]),
        );
      setExit(EXIT_OK);
    });
  withKind(parent.command('revoke <id-or-prefix>'))
    .description(`Revoke one ${what} by its id or prefix (as \`list\` shows them). Requests with it get 401 at once.`)
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (idOrPrefix: string, opts: { kind?: string; dataDir?: string }) => {
      const key = await withService(io, opts, (s) => s.keys.revoke(idOrPrefix, kind(opts)));
      io.stdout(`Revoked ${key.id} (${key.name}).\n`);
      setExit(EXIT_OK);
    });
}
