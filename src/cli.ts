#!/usr/bin/env node
/**
 * The `paperlink` command. Every command has --help. Exit codes: 0 done, 1 something failed
 * that is not the caller's input, 2 the input was wrong (a template, data, an option).
 * Each command is in src/cli/, in the file of its name (`keys` and `tokens` share keys.ts); what
 * they share (the exit codes, `report`, --data-dir, opening the service) is src/cli/shared.ts.
 */
import cluster from 'node:cluster';
import { Command, CommanderError } from 'commander';
import { addAdminCommands } from './cli/admin';
import { addAppsCommands } from './cli/apps';
import { addCodecServerCommand } from './cli/codec-server';
import { addDoctorCommand } from './cli/doctor';
import { addExamplesCommand } from './cli/examples';
import { addGenerateCommand } from './cli/generate';
import { addKeysCommands } from './cli/keys';
import { addRenderCommand } from './cli/render';
import { addSecretsCommands } from './cli/secrets';
import { addServeCommand } from './cli/serve';
import { EXIT_INPUT, EXIT_OK, processIo, report, type Io, type SetExit } from './cli/shared';
import { addTemplatesCommands } from './cli/templates';
import { addVariablesCommand } from './cli/variables';
import { addWorkerCommand } from './cli/worker';
import { printer } from './templates/html';
import { converter } from './templates/docx';

export { EXIT_FAILED, EXIT_INPUT, EXIT_OK, report, type Io } from './cli/shared';

export function buildProgram(io: Io, setExit: SetExit): Command {
  const program = new Command('paperlink')
    .description('Generate PDF documents from templates, share them by Magic Link, take postcard requests.')
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');
  // in the order --help lists them
  for (const add of [
    addRenderCommand,
    addVariablesCommand,
    addExamplesCommand,
    addServeCommand,
    addDoctorCommand,
    addCodecServerCommand,
    addWorkerCommand,
    addKeysCommands,
    addTemplatesCommands,
    addAppsCommands,
    addSecretsCommands,
    addAdminCommands,
    addGenerateCommand,
  ])
    add(program, io, setExit);
  return program;
}

/** Runs the CLI with the given arguments (without `node` and the script) and returns the exit code. */
export async function main(args: string[], io: Io = processIo): Promise<number> {
  let code = EXIT_OK;
  const program = buildProgram(io, (c) => (code = c));
  try {
    await program.parseAsync(args, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help')
        return EXIT_OK;
      // commander already printed what was wrong with the command line
      return EXIT_INPUT;
    }
    return report(err, io);
  } finally {
    // a command that printed an HTML or Word template started a browser or LibreOffice, which would keep the process alive
    await printer.close();
    await converter.close();
  }
}

if (require.main === module) {
  // `paperlink … | head` closes the pipe early: that is the reader's choice, not an error
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  // a worker of `serve --processes N` that failed (to bind its port, say) ends at once: its channel to
  // the primary would keep it alive, and the primary waits for it to end to stop the cluster
  const end = (code: number) => {
    process.exitCode = code;
    if (code !== EXIT_OK && cluster.isWorker) process.exit(code);
  };
  main(process.argv.slice(2)).then(end, (err) => end(report(err, processIo)));
}
