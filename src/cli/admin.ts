/**
 * `paperlink admin`: the web app's operator password.
 */
import type { Command } from 'commander';
import { MIN_PASSWORD } from '../admin';
import { ValidationError } from '../errors';
import { DATA_DIR_HELP, EXIT_OK, withService, type Io, type SetExit } from './shared';

export function addAdminCommands(program: Command, io: Io, setExit: SetExit): void {
  const admin = program
    .command('admin')
    .description("The web app's operator sign-in (the web app is at PUBLIC_URL/app; an API key also signs in).");
  admin
    .command('set-password')
    .description(
      `Set or change the operator password of the web app (at least ${MIN_PASSWORD} characters). Asks for it on a terminal; otherwise reads the first line of standard input. Signs out every operator session. Only a scrypt hash is stored.`,
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .addHelpText(
      'after',
      '\nExamples:\n  paperlink admin set-password\n  printf %s "$PAPERLINK_ADMIN_PASSWORD" | paperlink admin set-password',
    )
    .action(async (opts: { dataDir?: string }) => {
      let password: string;
      if (io.askSecret) {
        password = await io.askSecret('New operator password: ');
        if ((await io.askSecret('Repeat it: ')) !== password)
          throw new ValidationError('The two passwords differ; nothing was changed.', [
            { field: 'password', message: 'does not match its repetition', code: 'mismatch' },
          ]);
      } else if (io.stdin) {
        password = (await io.stdin()).split(/\r?\n/)[0];
      } else {
        throw new ValidationError('Give the password on standard input.', [
          { field: 'password', message: 'is required', code: 'required' },
        ]);
      }
      await withService(io, opts, (s) => s.operators.setPassword(password));
      io.stderr('Operator password set. Sign in at PUBLIC_URL/app with it (or with an API key).\n');
      setExit(EXIT_OK);
    });
}
