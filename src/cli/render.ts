/**
 * `paperlink render`: one document from a template file and a JSON file of values, no service.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { loadTemplateFile, renderTemplate, type RenderWarning } from '../templates';
import type { PdfStandard } from '../templates/standards';
import { EXIT_OK, readData, standardOption, type Io, type SetExit } from './shared';

export function addRenderCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('render')
    .description('Render one document from a template and a JSON file of values.')
    .argument(
      '<template>',
      'an XML template, an HTML template (Liquid), a Word .docx or a fillable PDF; assets are read from its folder',
    )
    .option('-d, --data <file>', 'JSON object of merge values ("-" reads standard input)')
    .option('-o, --out <file>', 'where to write the PDF (default: the template name with .pdf, in the current folder)')
    .addOption(standardOption())
    .addHelpText(
      'after',
      '\nExample:\n  paperlink render examples/letter/letter.xml --data examples/letter/sample.json --out letter.pdf\n\nExit codes: 0 written, 2 the template or the data is wrong (all missing variables are listed), 1 other failures.',
    )
    .action(async (template: string, opts: { data?: string; out?: string; pdfStandard?: PdfStandard }) => {
      const t = await loadTemplateFile(template);
      const values = await readData(opts.data, io);
      const warnings: RenderWarning[] = [];
      const pdf = await renderTemplate(t, values, { warnings, standard: opts.pdfStandard });
      for (const w of warnings) io.stderr(`warning: ${w.code}: ${w.message}\n`);
      const out = opts.out ?? `${path.basename(template).replace(/\.[^.]+$/, '')}.pdf`;
      fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
      fs.writeFileSync(out, pdf);
      io.stdout(`Wrote ${out} (${size(pdf.length)})\n`);
      setExit(EXIT_OK);
    });
}

function size(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`;
}
