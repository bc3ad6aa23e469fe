/**
 * `paperlink templates`: list, add and remove the templates stored in the service.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ValidationError } from '../errors';
import { MAX_PAGE } from '../pagination';
import { folderAssets } from '../templates';
import { DATA_DIR_HELP, EXIT_OK, table, withService, type Io, type SetExit } from './shared';

export function addTemplatesCommands(program: Command, io: Io, setExit: SetExit): void {
  const templates = program.command('templates').description('Manage the templates stored in the service.');
  templates
    .command('list')
    .description('List stored templates with their variables.')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .option('--json', 'print JSON')
    .action(async (opts: { dataDir?: string; json?: boolean }) => {
      const page = await withService(io, opts, (s) => s.templates.list({ limit: MAX_PAGE }));
      if (opts.json) io.stdout(`${JSON.stringify(page.data, null, 2)}\n`);
      else
        io.stdout(
          table([
            ['ID', 'NAME', 'FORMAT', 'VARIABLES'],
            ...page.data.map((t) => [t.id, t.name, t.format, t.variables.join(', ')]),
          ]),
        );
      setExit(EXIT_OK);
    });
  templates
    .command('add <file>')
    .description(
      'Store a template (an XML layout template, an HTML document with Liquid, a Word .docx, or a fillable PDF); the images, CSS and fonts it names are read from its folder.',
    )
    .option('-n, --name <name>', 'the template name (default: the name in the template, or the file name)')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (file: string, opts: { name?: string; dataDir?: string }) => {
      let source: Uint8Array;
      try {
        source = new Uint8Array(fs.readFileSync(file));
      } catch (err) {
        throw new ValidationError(`Cannot read ${file} (${(err as NodeJS.ErrnoException).code}).`, [
          { field: 'file', message: 'cannot be read' },
        ]);
      }
      const t = await withService(io, opts, (s) =>
        s.templates.create({
          source,
          name: opts.name ?? path.basename(file).replace(/\.[^.]+$/, ''),
          assets: folderAssets(path.dirname(file)),
        }),
      );
      io.stdout(`${t.id}\n`);
      io.stderr(`Stored "${t.name}" (${t.format}); variables: ${t.variables.join(', ') || 'none'}.\n`);
      setExit(EXIT_OK);
    });
  templates
    .command('remove <id>')
    .description('Delete a stored template. Documents made from it stay.')
    .option('-d, --data-dir <dir>', DATA_DIR_HELP)
    .action(async (id: string, opts: { dataDir?: string }) => {
      await withService(io, opts, (s) => s.templates.remove(id));
      io.stdout(`Deleted ${id}.\n`);
      setExit(EXIT_OK);
    });
}
