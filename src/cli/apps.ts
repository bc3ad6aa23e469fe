/**
 * `paperlink apps`: set up and show the apps of the service, `magic-link` and `storage`.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import { ValidationError } from '../errors';
import { publicView } from '../links/app';
import { DATA_DIR_HELP, EXIT_OK, withService, type Io, type SetExit } from './shared';

export function addAppsCommands(program: Command, io: Io, setExit: SetExit): void {
  const apps = program
    .command('apps')
    .description('Set up the apps of the service (the Magic Link app, the storage app).');
  magicLinkCommands(apps, io, setExit);
  storageCommands(apps, io, setExit);
}

/** `paperlink apps magic-link setup` and `show`. */
function magicLinkCommands(apps: Command, io: Io, setExit: SetExit): void {
  const magic = apps
    .command('magic-link')
    .description('The Magic Link app: where links point, who e-mails come from, how recipients prove who they are.');
  magic
    .command('setup')
    .description(
      'Set up (or change) the Magic Link app. Options left out keep their value; the first setup starts from the defaults.',
    )
    .option('--public-url <url>', 'the address recipients reach this service at (links are PUBLIC_URL/l/…)')
    .option('--organization <name>', 'the organisation named on the pages and e-mails')
    .option('--sender-name <name>', 'who the e-mails say shared the document')
    .option('--sender-email <address>', 'the sender address shown to recipients')
    .option('--accent-color <hex>', 'colour of buttons, e.g. #1F6FEB')
    .option('--logo-url <url>', 'an https URL or data: URI of a logo')
    .option('--auth-types <list>', 'comma-separated: email, social')
    .option(
      '--from-json <file>',
      'read every setting from a JSON file (the body of PUT /v1/apps/magic_link, with oidc_providers)',
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (opts: Record<string, string | undefined>) => {
      let body: Record<string, unknown> = {};
      if (opts.fromJson) {
        try {
          body = JSON.parse(fs.readFileSync(opts.fromJson, 'utf8')) as Record<string, unknown>;
        } catch (err) {
          throw new ValidationError(`Cannot read ${opts.fromJson} as JSON: ${(err as Error).message}`, [
            { field: '--from-json', message: 'is not a JSON file' },
          ]);
        }
      }
      const flags: [string, string][] = [
        ['publicUrl', 'public_url'],
        ['organization', 'organization_name'],
        ['senderName', 'sender_name'],
        ['senderEmail', 'sender_email'],
        ['accentColor', 'accent_color'],
        ['logoUrl', 'logo_url'],
      ];
      for (const [flag, field] of flags) if (opts[flag] !== undefined) body[field] = opts[flag];
      if (opts.authTypes) body.auth_types = opts.authTypes.split(',').map((x) => x.trim());
      const saved = await withService(io, { dataDir: opts.dataDir }, (s) => s.apps.magicLink.put(body));
      io.stdout(`${JSON.stringify(publicView(saved), null, 2)}\n`);
      setExit(EXIT_OK);
    });
  magic
    .command('show')
    .description('Print the Magic Link app settings (provider secrets are not shown).')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (opts: { dataDir?: string }) => {
      const app = await withService(io, opts, (s) => s.apps.magicLink.require());
      io.stdout(`${JSON.stringify(publicView(app), null, 2)}\n`);
      setExit(EXIT_OK);
    });
}

/** `paperlink apps storage setup` and `show`. */
function storageCommands(apps: Command, io: Io, setExit: SetExit): void {
  const storageApp = apps
    .command('storage')
    .description('The storage app: how long documents are kept when a generate request gives no retain_for.');
  storageApp
    .command('setup')
    .description(
      'Set how long documents are kept by default: then a document is deleted with its PDF, and its Magic Links end.',
    )
    .requiredOption('--retain-for <span>', 'a number and a unit, 30m, 12h or 90d; or "none": until deleted')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .addHelpText('after', '\nExample:\n  paperlink apps storage setup --retain-for 90d')
    .action(async (opts: { retainFor: string; dataDir?: string }) => {
      const m = /^(\d{1,9})\s*(m|min|minutes?|h|hours?|d|days?)$/i.exec(opts.retainFor.trim());
      if (!m && opts.retainFor.trim().toLowerCase() !== 'none')
        throw new ValidationError(
          `--retain-for takes a span like 30m, 12h or 90d, or "none"; not "${opts.retainFor}".`,
          [{ field: '--retain-for', message: 'is not a span', code: 'invalid' }],
        );
      const unit = m && ({ m: 'minutes', h: 'hours', d: 'days' } as const)[m[2][0].toLowerCase() as 'm' | 'h' | 'd'];
      const saved = await withService(io, { dataDir: opts.dataDir }, (s) =>
        s.apps.storage.put({ retain_for: m && unit ? { [unit]: Number(m[1]) } : null }),
      );
      io.stdout(`${JSON.stringify(saved, null, 2)}\n`);
      setExit(EXIT_OK);
    });
  storageApp
    .command('show')
    .description('Print the storage settings.')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (opts: { dataDir?: string }) => {
      io.stdout(`${JSON.stringify(await withService(io, opts, (s) => s.apps.storage.get()), null, 2)}\n`);
      setExit(EXIT_OK);
    });
}
