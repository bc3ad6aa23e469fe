/**
 * `paperlink examples`: the example templates shipped with Paperlink, rendered with their sample values.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { packageRoot } from '../paths';
import { loadTemplateFile, renderTemplate, TEMPLATE_FILE } from '../templates';
import { GALLERY, GALLERY_FORMATS, galleryDir, gallerySample } from '../templates/gallery';
import { EXIT_OK, readData, type Io, type SetExit } from './shared';

export function addExamplesCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('examples')
    .description(
      'Render the example templates shipped with Paperlink and the starter gallery (each in XML and HTML), with their sample values.',
    )
    .option('-o, --out <dir>', 'folder to write the PDFs to', 'out')
    .action(async (opts: { out: string }) => {
      const root = path.join(packageRoot(), 'examples');
      fs.mkdirSync(opts.out, { recursive: true });
      // each example folder's template with its sample.json, then each gallery template with its own
      const made: { name: string; file: string; values: () => Promise<Record<string, string>> }[] = [];
      for (const name of fs.readdirSync(root).sort()) {
        const dir = path.join(root, name);
        const template = dir === galleryDir() ? undefined : fs.readdirSync(dir).find((f) => TEMPLATE_FILE.test(f));
        if (!template) continue;
        const sample = path.join(dir, 'sample.json');
        const values = async () => (fs.existsSync(sample) ? await readData(sample, io) : {});
        made.push({ name, file: path.join(dir, template), values });
      }
      for (const { key } of GALLERY)
        for (const format of GALLERY_FORMATS)
          made.push({
            name: `gallery-${key}-${format}`,
            file: path.join(galleryDir(), `${key}.${format}`),
            values: () => Promise.resolve(gallerySample(key)),
          });
      for (const { name, file, values } of made) {
        const out = path.join(opts.out, `${name}.pdf`);
        try {
          fs.writeFileSync(out, await renderTemplate(await loadTemplateFile(file), await values()));
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
