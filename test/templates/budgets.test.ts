/**
 * What one document may make Chromium or LibreOffice hold (RENDER_PROCESS_MEMORY_MB): over it, the
 * program is stopped with every process it started, the render is refused naming the limit, and
 * the next document starts a fresh one. The budget here is below what an idle browser or
 * LibreOffice holds, so the first measurement trips it, long before the time budget.
 */
import { convertDocx, converter, fillDocx, compileDocx } from '../../src/templates/docx';
import { printer } from '../../src/templates/html';
import { loadTemplate, renderTemplate } from '../../src/templates';
import { DEFAULT_LIMITS } from '../../src/config';
import { setRenderLimits } from '../../src/templates/limits';
import { childrenWith } from '../../src/templates/watch';
import { makeDocx } from '../support/docx';
import { readPdf } from '../support/pdf';

const overBudget = {
  code: 'render_limit_exceeded',
  details: [expect.objectContaining({ field: 'render_memory_mb', code: 'render_limit_exceeded' })],
};

afterEach(() => setRenderLimits(DEFAULT_LIMITS));
afterAll(async () => {
  await printer.close();
  await converter.close();
});

describe('a browser over its memory budget', () => {
  it('is stopped with its processes, the render names the limit, and the next render gets a fresh one', async () => {
    // the rows written out, not a Liquid loop: what is measured is the browser, not how long Liquid
    // takes on a machine another suite keeps busy (a loop of 50,000 once ran past the time budget)
    const rows = await loadTemplate(
      `<!doctype html><html><body><p>{{ f }}</p><table>${Array.from({ length: 5_000 }, (_, i) => `<tr><td>${i}</td></tr>`).join('')}</table></body></html>`,
    );
    setRenderLimits({ ...DEFAULT_LIMITS, processMemoryMb: 64 });
    await expect(renderTemplate(rows, { f: 'x' }, { timeoutMs: 60_000 })).rejects.toMatchObject(overBudget);
    expect(childrenWith('paperlink-chromium-')).toEqual([]);
    setRenderLimits(DEFAULT_LIMITS);
    const small = await loadTemplate('<!doctype html><html><body><p>{{ f }}</p></body></html>');
    expect((await readPdf(await renderTemplate(small, { f: 'after the stop' }))).text).toContain('after the stop');
  }, 60_000);
});

describe('LibreOffice over its memory budget', () => {
  it('is stopped with its processes, the render names the limit, and the next conversion starts it again', async () => {
    const table = compileDocx(makeDocx(['{#rows}', { table: [['{n}', 'row']] }, '{/rows}']), {});
    const filled = fillDocx(table, {
      rows: JSON.stringify(Array.from({ length: 5_000 }, (_, n) => ({ n: String(n) }))),
    });
    setRenderLimits({ ...DEFAULT_LIMITS, processMemoryMb: 64 });
    await expect(convertDocx(filled, { timeoutMs: 60_000 })).rejects.toMatchObject(overBudget);
    expect(childrenWith('paperlink-office-')).toEqual([]);
    setRenderLimits(DEFAULT_LIMITS);
    const small = compileDocx(makeDocx(['{name}']), {});
    expect((await readPdf(await convertDocx(fillDocx(small, { name: 'Pat' }), { timeoutMs: 60_000 }))).text).toContain(
      'Pat',
    );
  });
});
