import { PDFDocument, StandardFonts } from 'pdf-lib';
import { InvalidValueError, TemplateError, UnsupportedCharacterError } from '../../src/errors';
import { loadTemplate, renderTemplate, variables } from '../../src/templates';
import { readPdf, run } from '../support/pdf';

/** A form like the ones people export from Acrobat: one field of every kind. */
async function form(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.setTitle('Membership form');
  const page = doc.addPage([612, 792]);
  const helvetica = await doc.embedFont(StandardFonts.Helvetica);
  page.drawText('Membership form', { x: 50, y: 740, size: 18, font: helvetica });
  const f = doc.getForm();
  const name = f.createTextField('full_name');
  name.addToPage(page, { x: 50, y: 680, width: 300, height: 24 });
  name.setFontSize(11);
  const notes = f.createTextField('notes');
  notes.enableMultiline();
  notes.addToPage(page, { x: 50, y: 560, width: 300, height: 100 });
  const zip = f.createTextField('zip');
  zip.setMaxLength(5);
  zip.addToPage(page, { x: 50, y: 520, width: 100, height: 24 });
  f.createCheckBox('agree').addToPage(page, { x: 50, y: 480, width: 16, height: 16 });
  const plan = f.createRadioGroup('plan');
  plan.addOptionToPage('basic', page, { x: 50, y: 440, width: 16, height: 16 });
  plan.addOptionToPage('pro', page, { x: 100, y: 440, width: 16, height: 16 });
  const country = f.createDropdown('country');
  country.addOptions(['Greece', 'Poland', 'Ukraine']);
  country.addToPage(page, { x: 50, y: 400, width: 150, height: 24 });
  const extras = f.createOptionList('extras');
  extras.addOptions(['Newsletter', 'Parking', 'Locker']);
  extras.enableMultiselect();
  extras.addToPage(page, { x: 50, y: 300, width: 150, height: 80 });
  // Acrobat marks "auto" font size as 0 in the default appearance; pdf-lib writes a computed size
  for (const auto of [notes, zip]) auto.acroField.setDefaultAppearance('/Helv 0 Tf 0 g');
  return doc.save({ updateFieldAppearances: false });
}

const values = {
  full_name: 'Ζωή Κοβαλτσύκ-Łęcka',
  notes: 'Первая строка\nSecond line',
  zip: '97209',
  agree: 'yes',
  plan: 'pro',
  country: 'Poland',
  extras: 'Newsletter, Locker',
};

describe('fillable PDF templates', () => {
  it('are templates whose variables are the form fields, in form order', async () => {
    const t = await loadTemplate(await form());
    expect(t.kind).toBe('pdf');
    expect(t.name).toBe('Membership form');
    expect(variables(t)).toEqual(['full_name', 'notes', 'zip', 'agree', 'plan', 'country', 'extras']);
  });

  it('fill text fields (with Unicode), check boxes, radio groups, dropdowns and lists, then flatten', async () => {
    const t = await loadTemplate(await form());
    const bytes = await renderTemplate(t, values);
    const pdf = await readPdf(bytes);
    const text = pdf.pages[0].text;
    expect(text).toContain('Membership form');
    expect(text).toContain('Ζωή Κοβαλτσύκ-Łęcka');
    expect(text).toMatch(/Первая\s*строка/);
    expect(text).toContain('Second line');
    expect(text).toContain('97209');
    expect(text).toContain('Poland');
    // a size the form sets is kept; "auto" fields get a size that fits, not 80-point text
    expect(run(pdf.pages[0], 'Ζωή').size).toBe(11);
    expect(run(pdf.pages[0], 'Первая').size).toBeLessThanOrEqual(12);
    expect(run(pdf.pages[0], '97209').size).toBeLessThanOrEqual(12);
    // flattened: no fields left to edit
    expect((await PDFDocument.load(bytes)).getForm().getFields()).toHaveLength(0);
  });

  it('tick a check box for true, yes, 1 and on, and leave it empty for false, no, 0, off and ""', async () => {
    const t = await loadTemplate(await form());
    // what is drawn inside the check box (at x 50, 16 pt square, 296 pt from the top)
    const marks = async (agree: string) => {
      const page = (await readPdf(await renderTemplate(t, { ...values, agree }))).pages[0];
      return page.shapes.filter((s) => s.x >= 49 && s.x + s.width <= 67 && s.y >= 295 && s.y + s.height <= 313).length;
    };
    const empty = await marks('no');
    for (const yes of ['true', 'YES', '1', 'on']) expect(await marks(yes)).toBeGreaterThan(empty);
    for (const no of ['false', '0', 'off', '']) expect(await marks(no)).toBe(empty);
  });

  it('refuse a value a field cannot take, naming the field', async () => {
    const t = await loadTemplate(await form());
    await expect(renderTemplate(t, { ...values, agree: 'maybe' })).rejects.toMatchObject({
      code: 'invalid_value',
      variable: 'agree',
    });
    await expect(renderTemplate(t, { ...values, plan: 'enterprise' })).rejects.toMatchObject({
      code: 'invalid_value',
      variable: 'plan',
    });
    await expect(renderTemplate(t, { ...values, country: 'Atlantis' })).rejects.toBeInstanceOf(InvalidValueError);
    await expect(renderTemplate(t, { ...values, extras: 'Sauna' })).rejects.toMatchObject({ variable: 'extras' });
    await expect(renderTemplate(t, { ...values, zip: '972090' })).rejects.toMatchObject({ variable: 'zip' });
    await expect(renderTemplate(t, { ...values, full_name: '山田' })).rejects.toBeInstanceOf(UnsupportedCharacterError);
  });

  it('report every missing field at once', async () => {
    const t = await loadTemplate(await form());
    await expect(renderTemplate(t, { full_name: 'x' })).rejects.toMatchObject({
      code: 'missing_variables',
      missing: ['notes', 'zip', 'agree', 'plan', 'country', 'extras'],
    });
  });

  it('refuse a PDF without form fields and a damaged PDF', async () => {
    const plain = await PDFDocument.create();
    plain.addPage();
    await expect(loadTemplate(await plain.save())).rejects.toBeInstanceOf(TemplateError);
    const damaged = Buffer.from(await form()).subarray(0, 400);
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined); // pdf-lib reports what it skips
    await expect(loadTemplate(damaged)).rejects.toBeInstanceOf(TemplateError);
    warn.mockRestore();
  });
});
