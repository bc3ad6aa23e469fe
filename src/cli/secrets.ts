/**
 * `paperlink secrets`: rotate the keys Magic Link URLs are derived with.
 */
import type { Command } from 'commander';
import { LinkKeyring, linkKeyring } from '../links/keyring';
import { DATA_DIR_HELP, EXIT_OK, withService, type Io, type SetExit } from './shared';

export function addSecretsCommands(program: Command, io: Io, setExit: SetExit): void {
  const secrets = program
    .command('secrets')
    .description(
      'The keys Magic Link URLs are derived with, kept outside the database (DATA_DIR/secrets/link-token-keys, or LINK_TOKEN_KEYS).',
    );
  secrets
    .command('rotate')
    .description(
      'Add a new current key: new links and resends use it; every live link keeps its URL (each link remembers its key). With LINK_TOKEN_KEYS set, prints the new entry to append there on every process instead.',
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .addHelpText('after', '\nExample:\n  paperlink secrets rotate --data-dir /var/lib/paperlink')
    .action(async (opts: { dataDir?: string }) => {
      await withService(io, opts, async (s) => {
        const keyring = linkKeyring(s.config);
        if (s.config.linkTokenKeys === undefined) {
          const key = keyring.rotate();
          io.stdout(
            `Added the Magic Link key ${key.id} to ${keyring.where}; new links use it, live links keep their URLs.\n`,
          );
          return;
        }
        const key = LinkKeyring.next(keyring.all());
        io.stdout(`${key.id}:${key.key.toString('base64')}\n`);
        io.stderr(
          'Append that entry (after a comma) to LINK_TOKEN_KEYS on every process, then restart them: the last key is the current one. Keep the old entries: live links need them.\n',
        );
      });
      setExit(EXIT_OK);
    });
}
