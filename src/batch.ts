/**
 * `paperlink generate`: one PDF per row of a CSV or JSON Lines file. A bad row is reported and
 * skipped; the others are still written.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { PaperlinkError, ValidationError } from './errors';
import type { TemplateSummary } from './templates';
import { inProcessRenderer, type Renderer } from './templates/pool';
import type { PdfStandard } from './templates/standards';
import { normalizeValues } from './templates/values';

export interface Row {
  /** 1 for the first data row (the line after a CSV header, the first line of JSON Lines). */
  row: number;
  values?: unknown;
  /** Why the row could not even be read. */
  error?: string;
}

export interface BatchResult {
  written: string[];
  failures: { row: number; reason: string }[];
}

/** Reads rows from a .csv file (first line = variable names) or a .jsonl/.ndjson file (one JSON object per line). */
export async function readRows(file: string): Promise<Row[]> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new ValidationError(`Cannot read the data file ${file} (${(err as NodeJS.ErrnoException).code}).`, [
      { field: '--data', message: 'cannot be read', code: 'unreadable' },
    ]);
  }
  const ext = path.extname(file).toLowerCase();
  if (ext === '.csv') {
    try {
      const records = parse(text, { columns: true, bom: true, skip_empty_lines: true, trim: false }) as Record<
        string,
        string
      >[];
      return records.map((values, i) => ({ row: i + 1, values }));
    } catch (err) {
      throw new ValidationError(`The CSV file ${file} cannot be read: ${(err as Error).message}`, [
        { field: '--data', message: 'is not valid CSV', code: 'invalid' },
      ]);
    }
  }
  if (ext === '.jsonl' || ext === '.ndjson') {
    const rows: Row[] = [];
    for (const line of text.split(/\r?\n/)) {
      if (line.trim() === '') continue;
      const row = rows.length + 1;
      try {
        rows.push({ row, values: JSON.parse(line) });
      } catch (err) {
        rows.push({ row, error: `not valid JSON: ${(err as Error).message}` });
      }
    }
    return rows;
  }
  throw new ValidationError(`The data file must end in .csv, .jsonl or .ndjson, not ${JSON.stringify(ext || file)}.`, [
    { field: '--data', message: 'unknown file type', code: 'invalid' },
  ]);
}

function reason(err: unknown): string {
  if (err instanceof PaperlinkError) {
    const where = err.details.map((d) => d.field).filter((f, i, a) => a.indexOf(f) === i);
    return `${err.code}: ${err.message}${where.length && !err.message.includes(where[0]) ? ` (${where.join(', ')})` : ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Renders every row into `outDir` as row-0001.pdf, row-0002.pdf, …, `concurrency` at a time. */
export async function renderBatch(
  template: TemplateSummary,
  rows: Row[],
  outDir: string,
  options: { concurrency?: number; onRow?: () => void; renderer?: Renderer; standard?: PdfStandard } = {},
): Promise<BatchResult> {
  const renderer = options.renderer ?? inProcessRenderer;
  await fs.mkdir(outDir, { recursive: true });
  const width = Math.max(4, String(rows.length).length);
  const result: BatchResult = { written: [], failures: [] };
  let next = 0;
  const worker = async () => {
    while (next < rows.length) {
      const r = rows[next++];
      try {
        if (r.error) throw new Error(r.error);
        const pdf = await renderer.render(template, normalizeValues(r.values, 'row'), { standard: options.standard });
        const file = path.join(outDir, `row-${String(r.row).padStart(width, '0')}.pdf`);
        await fs.writeFile(file, pdf);
        result.written.push(file);
      } catch (err) {
        result.failures.push({ row: r.row, reason: reason(err) });
      }
      options.onRow?.();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 2, rows.length || 1)) }, worker));
  result.written.sort();
  result.failures.sort((a, b) => a.row - b.row);
  return result;
}
