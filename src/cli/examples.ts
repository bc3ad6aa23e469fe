/**
 * `paperlink examples`: the example templates shipped with Paperlink, rendered with their sample values.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { packageRoot } from '../paths';
import { loadTemplateFile, renderTemplate, TEMPLATE_FILE } from '../templates';
import { EXIT_OK, readData, type Io, type SetExit } from './shared';

export function addExamplesCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('examples')
    .description('Render the example templates shipped with Paperlink, with their sample values.')
    .option('-o, --out <dir>', 'folder to write the PDFs to', 'out')
    .action(async (opts: { out: string }) => {
      const root = path.join(packageRoot(), 'examples');
      fs.mkdirSync(opts.out, { recursive: true });
      for (const name of fs.readdirSync(root).sort()) {
        const dir = path.join(root, name);
        const template = fs.readdirSync(dir).find((f) => TEMPLATE_FILE.test(f));
        if (!template) continue;
        const t = await loadTemplateFile(path.join(dir, template));
        const sample = path.join(dir, 'sample.json');
        const values = fs.existsSync(sample) ? await readData(sample, io) : {};
        const out = path.join(opts.out, `${name}.pdf`);
        try {
          fs.writeFileSync(out, await renderTemplate(t, values));
        } catch (err) {
          // an HTML or Word example where Chromium or LibreOffice is missing: the others are still made
          if ((err as { code?: string }).code !== 'format_unavailable') throw err;
          io.stderr(`Skipped ${name}: ${(err as Error).message}\n`);
          continue;
        }
        io.stdout(`Wrote ${out}\n`);
      }
      setExit(EXIT_OK);
    });
}
