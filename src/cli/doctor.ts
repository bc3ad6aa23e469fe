/**
 * `paperlink doctor`: whether this machine, with this configuration, can do what the service does.
 * Its options and what it prints; the checks are in src/doctor.ts.
 */
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { line, runDoctor } from '../doctor';
import { packageVersion } from '../service';
import { DATA_DIR_HELP, EXIT_FAILED, EXIT_OK, type Io, type SetExit } from './shared';

export function addDoctorCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('doctor')
    .description(
      'Check that this machine, with this configuration, can do what the service does: the database, the document storage, the link keys, mail, Temporal (with ENGINE=temporal), the sandbox, and a small document of each template format (XML, PDF forms, HTML, Word) rendered as a generate renders it.',
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .option('--json', 'print the checks as one JSON array ({name, outcome, says, fix}) instead of a line each')
    .addHelpText(
      'after',
      '\nEach check prints one line: ok, warn (works without it: e.g. Word templates refused where LibreOffice is missing; a database behind this build), FAIL (with what to fix), or skip.\nIt reads the same environment as `paperlink serve` (DATA_DIR, DATABASE_URL, STORAGE, SMTP_URL, ENGINE, CHROMIUM_PATH, TEMPLATE_SANDBOX, …). It runs no migration and makes no database; it writes a probe row (kept, overwritten each time) and a probe file (deleted), and, as `serve` would at its start, the link key file and its fingerprint where there are none yet and the outbox folder.\n\nExit codes: 0 nothing failed, 1 a check failed.',
    )
    .action(async (opts: { dataDir?: string; json?: boolean }) => {
      const config = loadConfig(process.env, { dataDir: opts.dataDir });
      if (!opts.json)
        io.stdout(
          `Checking Paperlink ${packageVersion()} on this machine (ENGINE=${config.engine}, DATA_DIR=${config.dataDir}):\n`,
        );
      const checks = await runDoctor(config, opts.json ? undefined : (c) => io.stdout(line(c)));
      const failed = checks.filter((c) => c.outcome === 'fail').length;
      if (opts.json) io.stdout(`${JSON.stringify(checks, null, 2)}\n`);
      else io.stdout(failed ? `${failed} check${failed === 1 ? '' : 's'} failed.\n` : 'Nothing failed.\n');
      setExit(failed ? EXIT_FAILED : EXIT_OK);
    });
}
