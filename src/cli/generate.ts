/**
 * `paperlink generate`: one PDF per row of a CSV or JSON Lines file, into a folder, with a progress
 * bar and a summary of the rows that failed. The rows are read and rendered by src/batch.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import type { Command } from 'commander';
import { Presets, SingleBar } from 'cli-progress';
import { readRows, renderBatch } from '../batch';
import { ValidationError } from '../errors';
import { loadTemplateFile } from '../templates';
import { createRenderer } from '../templates/pool';
import { checkAvailable, type PdfStandard } from '../templates/standards';
import { DATA_DIR_HELP, EXIT_INPUT, EXIT_OK, standardOption, withService, type Io, type SetExit } from './shared';

export function addGenerateCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('generate')
    .description(
      'Render one PDF per row of a CSV or JSON Lines file, into a folder, with a progress bar and a summary of failures.',
    )
    .requiredOption('-t, --template <id-or-file>', 'a stored template id (tmpl_…) or a template file')
    .requiredOption('--data <file>', 'rows.csv (header = variable names) or rows.jsonl (one JSON object per line)')
    .requiredOption('-o, --out <dir>', 'folder for row-0001.pdf, row-0002.pdf, …')
    .option(
      '-c, --concurrency <n>',
      `documents rendered at once, each on a render thread (default: the number of cores, here ${os.availableParallelism()})`,
      (v) => Number(v),
    )
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .addOption(standardOption())
    .addHelpText(
      'after',
      '\nExample:\n  paperlink generate --template tmpl_example_letter --data people.csv --out letters\n\nExit codes: 0 every row written, 2 some rows failed (the others are written), 1 other failures.',
    )
    .action(
      async (opts: {
        template: string;
        data: string;
        out: string;
        concurrency?: number;
        dataDir?: string;
        pdfStandard?: PdfStandard;
      }) => {
        opts.concurrency ??= os.availableParallelism();
        if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1 || opts.concurrency > 64) {
          throw new ValidationError('--concurrency must be a whole number from 1 to 64.', [
            { field: '--concurrency', message: 'must be 1 to 64' },
          ]);
        }
        const rows = await readRows(opts.data);
        const template = fs.existsSync(opts.template)
          ? await loadTemplateFile(opts.template)
          : await withService(io, opts, (s) => s.templates.load(opts.template));
        checkAvailable(template.kind, opts.pdfStandard);
        const started = Date.now();
        const bar = new SingleBar(
          {
            format: 'Rendering [{bar}] {value}/{total} rows | {eta_formatted} left',
            stream: process.stderr,
            noTTYOutput: !process.stderr.isTTY,
            notTTYSchedule: 2000,
          },
          Presets.shades_classic,
        );
        bar.start(rows.length, 0);
        const renderer = createRenderer({ threads: Math.min(opts.concurrency, rows.length || 1) });
        let result;
        try {
          result = await renderBatch(template, rows, opts.out, {
            concurrency: opts.concurrency,
            onRow: () => bar.increment(),
            renderer,
            standard: opts.pdfStandard,
          });
        } finally {
          bar.stop();
          await renderer.close();
        }
        io.stdout(
          `${result.written.length} of ${rows.length} rows rendered into ${opts.out} in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`,
        );
        if (result.failures.length) {
          io.stdout(`${result.failures.length} failed:\n`);
          for (const f of result.failures) io.stdout(`  row ${f.row}: ${f.reason}\n`);
        }
        setExit(result.failures.length ? EXIT_INPUT : EXIT_OK);
      },
    );
}
