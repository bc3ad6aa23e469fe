#!/usr/bin/env node
/**
 * The `paperlink` command. Every command has --help. Exit codes: 0 done, 1 something failed
 * that is not the caller's input, 2 the input was wrong (a template, data, an option).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { PaperlinkError, ValidationError } from './errors';
import { packageRoot } from './paths';
import { loadTemplateFile, renderTemplate, variables } from './templates';
import { normalizeValues } from './templates/values';

export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  stdin?: () => Promise<string>;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_INPUT = 2;

const processIo: Io = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  stdin: async () => {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
};

/** Prints an error the way every command does, and returns its exit code. */
export function report(err: unknown, io: Io): number {
  if (err instanceof PaperlinkError) {
    io.stderr(`error (${err.code}): ${err.message}\n`);
    for (const d of err.details) if (d.message !== err.message) io.stderr(`  ${d.field}: ${d.message}\n`);
    return err instanceof ValidationError ? EXIT_INPUT : EXIT_FAILED;
  }
  io.stderr(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT_FAILED;
}

async function readData(file: string | undefined, io: Io): Promise<Record<string, string>> {
  if (file === undefined) return {};
  let text: string;
  if (file === '-') {
    if (!io.stdin) throw new ValidationError('No standard input to read --data from.');
    text = await io.stdin();
  } else {
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      throw new ValidationError(`Cannot read the data file ${file} (${(err as NodeJS.ErrnoException).code}).`, [{ field: '--data', message: 'cannot be read' }]);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ValidationError(`The data file ${file} is not valid JSON: ${(err as Error).message}`, [{ field: '--data', message: 'is not valid JSON' }]);
  }
  return normalizeValues(parsed, 'data');
}

function size(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`;
}

export function buildProgram(io: Io, setExit: (code: number) => void): Command {
  const program = new Command('paperlink')
    .description('Generate PDF documents from templates, share them by Magic Link, take postcard requests.')
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('render')
    .description('Render one document from a template and a JSON file of values.')
    .argument('<template>', 'an XML template or a fillable PDF; assets are read from its folder')
    .option('-d, --data <file>', 'JSON object of merge values ("-" reads standard input)')
    .option('-o, --out <file>', 'where to write the PDF (default: the template name with .pdf, in the current folder)')
    .addHelpText('after', '\nExample:\n  paperlink render examples/letter/letter.xml --data examples/letter/sample.json --out letter.pdf\n\nExit codes: 0 written, 2 the template or the data is wrong (all missing variables are listed), 1 other failures.')
    .action(async (template: string, opts: { data?: string; out?: string }) => {
      const t = await loadTemplateFile(template);
      const values = await readData(opts.data, io);
      const pdf = await renderTemplate(t, values);
      const out = opts.out ?? `${path.basename(template).replace(/\.[^.]+$/, '')}.pdf`;
      fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
      fs.writeFileSync(out, pdf);
      io.stdout(`Wrote ${out} (${size(pdf.length)})\n`);
      setExit(EXIT_OK);
    });

  program
    .command('variables')
    .description("Print a template's variables, in order of first use.")
    .argument('<template>', 'an XML template or a fillable PDF')
    .option('--json', 'print a JSON array instead of one name a line')
    .action(async (template: string, opts: { json?: boolean }) => {
      const names = variables(await loadTemplateFile(template));
      io.stdout(opts.json ? `${JSON.stringify(names)}\n` : names.map((n) => `${n}\n`).join(''));
      setExit(EXIT_OK);
    });

  program
    .command('examples')
    .description('Render the example templates shipped with Paperlink, with their sample values.')
    .option('-o, --out <dir>', 'folder to write the PDFs to', 'out')
    .action(async (opts: { out: string }) => {
      const root = path.join(packageRoot(), 'examples');
      fs.mkdirSync(opts.out, { recursive: true });
      for (const name of fs.readdirSync(root).sort()) {
        const dir = path.join(root, name);
        const template = fs.readdirSync(dir).find((f) => f.endsWith('.xml') || f.endsWith('.pdf'));
        if (!template) continue;
        const t = await loadTemplateFile(path.join(dir, template));
        const sample = path.join(dir, 'sample.json');
        const values = fs.existsSync(sample) ? await readData(sample, io) : {};
        const out = path.join(opts.out, `${name}.pdf`);
        fs.writeFileSync(out, await renderTemplate(t, values));
        io.stdout(`Wrote ${out}\n`);
      }
      setExit(EXIT_OK);
    });

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
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return EXIT_OK;
      // commander already printed what was wrong with the command line
      return EXIT_INPUT;
    }
    return report(err, io);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.exitCode = report(err, processIo);
    },
  );
}
