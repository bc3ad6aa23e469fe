/**
 * `paperlink variables`: the variables a template file asks for, with the defaults of the optional ones.
 */
import type { Command } from 'commander';
import { loadTemplateFile, variables } from '../templates';
import { EXIT_OK, type Io, type SetExit } from './shared';

export function addVariablesCommand(program: Command, io: Io, setExit: SetExit): void {
  program
    .command('variables')
    .description(
      'Print a template\'s variables, in order of first use; an optional one (written {{name | default: "…"}}) with its default.',
    )
    .argument(
      '<template>',
      'an XML template, an HTML template, a Word .docx or a fillable PDF, or a folder holding one',
    )
    .option('--json', 'print {"required": [...], "optional": {"name": "default", ...}} instead of one name a line')
    .addHelpText('after', '\nExample output:\n  first_name\n  company (optional, default "")')
    .action(async (template: string, opts: { json?: boolean }) => {
      const t = await loadTemplateFile(template);
      const names = variables(t);
      if (opts.json)
        io.stdout(
          `${JSON.stringify({ required: names.filter((n) => !Object.hasOwn(t.defaults, n)), optional: t.defaults })}\n`,
        );
      else
        io.stdout(
          names
            .map((n) =>
              Object.hasOwn(t.defaults, n) ? `${n} (optional, default ${JSON.stringify(t.defaults[n])})\n` : `${n}\n`,
            )
            .join(''),
        );
      setExit(EXIT_OK);
    });
}
