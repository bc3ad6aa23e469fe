// Rendering on one thread, in this process, beside the best a user could pick instead (Typst) and
// the floor of pdf-lib itself: the bench letter (DejaVu Sans + Bold, the 720×180 logo, US Letter, a
// different recipient each document) and a 10-page flowing document. CPU ms per document beside
// the rate: this machine is shared and noisy. Both outputs' text is read back with pdf.js.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { PDFDocument, PDFObjectCopier, StandardFonts, rgb, drawImage, degrees } = require('pdf-lib');
const { NodeCompiler } = require('@myriaddreamin/typst-ts-node-compiler');
const { loadTemplate, renderTemplate, folderAssets } = require('../dist/src/templates');
const { printer } = require('../dist/src/templates/html');
const { converter, officePaths } = require('../dist/src/templates/docx');
const { processTree } = require('../dist/src/templates/watch');
const { htmlFloor, wordFloor } = require('./printfloor');
const { PDF_STANDARDS } = require('../dist/src/templates/standards');

const root = path.resolve(__dirname, '..');
const dejavu = (f) =>
  fs.readFileSync(path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf', f));
const logo = fs.readFileSync(path.join(root, 'examples/letter/logo.png'));

const values = {
  date: 'November 22, 2026',
  name: 'Dr. Eleanor Vance',
  address: '1200 Riverside Drive, Suite 300\nPortland, OR 97201',
  subject: 'Design proposal for the new visitor centre',
  p1: 'Thank you for meeting with us last Thursday to talk about the new visitor centre. We enjoyed walking the site with your team and came away with a clear picture of what the building has to do: welcome twelve thousand visitors a month, tell the story of the river, and stay quiet enough that the birds do not notice.',
  p2: 'We would begin with a four-week discovery phase in which we interview your staff and volunteers, study the visitor numbers from the last three seasons, and map how people move through the existing hall. From that work we will propose two design directions, each with sketches, a rough budget and a schedule.',
  p3: 'Once you have chosen a direction, we would develop it into a full design over eight weeks, with a review every fortnight. Our fee for discovery and design is fixed, and we invoice it in three parts so that you never pay for work you have not yet seen.',
  sender: 'Marta Kowalczyk',
};
const PARAGRAPH = `${values.p1} ${values.p2}`;
let recipient = 0;
/** The letter's values for the next recipient: every document differs, as in real use. */
const nextValues = () => ({ ...values, name: `${values.name} ${++recipient}` });

// ---- Typst: the same letter and flowing text, the same two fonts and logo ----
const TYPST_LETTER = `#let d = sys.inputs
#set page(paper: "us-letter", margin: 72pt)
#set text(font: "DejaVu Sans", size: 11pt)
#set par(leading: 0.4em, spacing: 1em)
#image("logo.png", width: 160pt)
#v(12pt)
#align(right)[#d.date]

*#d.name* \\
#d.address.split("\\n").join([ \\ ])

*Re: #d.subject*

Dear #d.name,

#d.p1

#d.p2

#d.p3

#line(length: 100%)
Kind regards,

*#d.sender*
`;
const TYPST_FLOWING = `#let d = sys.inputs
#set page(paper: "us-letter", margin: 72pt, footer: context align(center, text(size: 9pt)[Page #counter(page).display() of #counter(page).final().first()]))
#set text(font: "DejaVu Sans", size: 11pt)
#set par(justify: true, leading: 0.4em)
#d.first #parbreak()
#for i in range(int(d.n) - 1) [#d.text #parbreak()]
`;

function typstCompiler() {
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-typst-'));
  fs.writeFileSync(path.join(workspace, 'logo.png'), logo);
  const compiler = NodeCompiler.create({
    workspace,
    fontArgs: [{ fontBlobs: [dejavu('DejaVuSans.ttf'), dejavu('DejaVuSans-Bold.ttf')] }],
  });
  const pdf = (mainFileContent, inputs) => {
    const out = compiler.pdf({ mainFileContent, inputs });
    if (!out || !out.length)
      throw new Error(`typst failed: ${JSON.stringify(compiler.fetchDiagnostics?.(out) ?? null)}`);
    return new Uint8Array(out);
  };
  return { pdf, cleanup: () => fs.rmSync(workspace, { recursive: true, force: true }) };
}

// ---- the floor of pdf-lib itself: a standard font (nothing embedded), the logo decoded once ----
let logoSource;
async function floorLetter() {
  if (!logoSource) {
    const scratch = await PDFDocument.create();
    const image = await scratch.embedPng(logo);
    await image.embed();
    logoSource = { context: scratch.context, ref: image.ref };
  }
  const v = nextValues();
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const image = doc.context.register(
    PDFObjectCopier.for(logoSource.context, doc.context).copy(logoSource.context.lookup(logoSource.ref)),
  );
  const page = doc.addPage([612, 792]);
  const size = 11;
  const lh = size * 1.4;
  let y = 792 - 72;
  page.pushOperators(
    ...drawImage(page.node.newXObject('Image', image), {
      x: 72,
      y: y - 40,
      width: 160,
      height: 40,
      rotate: degrees(0),
      xSkew: degrees(0),
      ySkew: degrees(0),
    }),
  );
  y -= 64;
  const text = (t, f = font) => {
    page.drawText(t, { x: 72, y: y - size, size, font: f, maxWidth: 468, lineHeight: lh, color: rgb(0.1, 0.1, 0.1) });
    y -= t.split('\n').reduce((n, l) => n + Math.max(1, Math.ceil(f.widthOfTextAtSize(l, size) / 468)), 0) * lh + 6;
  };
  page.drawText(v.date, { x: 540 - font.widthOfTextAtSize(v.date, size), y: y - size, size, font });
  y -= lh + 6;
  for (const [t, f] of [
    [v.name, bold],
    [v.address],
    [`Re: ${v.subject}`, bold],
    [`Dear ${v.name},`],
    [v.p1],
    [v.p2],
    [v.p3],
    ['Kind regards,'],
    [v.sender, bold],
  ])
    text(t, f);
  return doc.save();
}

/**
 * Counts the CPU this process and every process under it use from now on, in µs: threads, and
 * Chromium's and LibreOffice's processes, from /proc (Linux). A browser is replaced every some
 * documents, and the CPU of a process that ended is not counted by any process left (a sandbox's
 * processes are reaped inside it), so the tree is read every 50 ms and each process's last reading
 * kept: one that ends loses at most its last 50 ms.
 */
function cpuCounter() {
  const own0 = process.cpuUsage();
  const first = new Map();
  const last = new Map();
  const read = (seed) =>
    descendants(process.pid, (kid) => {
      const f = fs.readFileSync(`/proc/${kid}/stat`, 'utf8').split(') ')[1].split(' ');
      const key = `${kid}:${f[19]}`; // pid and start time: a pid used again is another process
      // its own threads only: what its children used is theirs, read from them (a parent's count of
      // the children it reaped would count an ended renderer twice)
      const us = (Number(f[11]) + Number(f[12])) * 10_000; // USER_HZ is 100
      if (!first.has(key)) first.set(key, seed ? us : 0);
      last.set(key, us);
    });
  read(true);
  const timer = setInterval(() => read(false), 50);
  return () => {
    clearInterval(timer);
    read(false);
    const own = process.cpuUsage(own0);
    let kids = 0;
    for (const [key, us] of last) kids += us - first.get(key);
    return own.user + own.system + kids;
  };
}

/**
 * Memory of this process and every process it started, MB: resident (RSS, the pages each process
 * shares with the others counted in each: Chromium's ten processes map the same program) and
 * proportional (PSS, each shared page divided among the processes that share it: what they hold
 * together).
 */
function treeMemoryMb() {
  const of = (pid) => {
    const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return {
      rss: Number(/^Rss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0),
      pss: Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0),
    };
  };
  const sum = of(process.pid);
  descendants(process.pid, (kid) => {
    const m = of(kid);
    sum.rss += m.rss;
    sum.pss += m.pss;
  });
  return { rss: sum.rss / 1024, pss: sum.pss / 1024 };
}

/** Calls `each` with the pid of every process below `root` (one that went away meanwhile is skipped). */
function descendants(root, each) {
  for (const kid of processTree(root).slice(1)) {
    try {
      each(kid);
    } catch {
      // gone meanwhile
    }
  }
}

/**
 * Runs `fn` for rounds of at least `seconds` after a warm-up and reports the median round's rate
 * of documents (`per` documents a call), the CPU time per document over all rounds (every thread of
 * this process, and the processes it started: the browser that prints HTML templates), the memory
 * added, and the last output.
 */
async function measure(label, fn, { seconds = 2, rounds = 3, per = 1 } = {}) {
  let out;
  const mem0 = treeMemoryMb();
  const warm = Date.now();
  while (Date.now() - warm < 500) out = await fn();
  const rates = [];
  let calls = 0;
  const cpuUsed = cpuCounter();
  for (let r = 0; r < rounds; r++) {
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    while (elapsed < seconds * 1e9) {
      out = await fn();
      n++;
      elapsed = Number(process.hrtime.bigint() - start);
    }
    calls += n;
    rates.push(n / (elapsed / 1e9));
    process.stderr.write(`  ${label}: round ${r + 1}/${rounds}, ${rates[r].toFixed(1)}/s\n`);
  }
  const cpuUs = cpuUsed();
  const mem = treeMemoryMb();
  rates.sort((a, b) => a - b);
  out = [out].flat()[0];
  return {
    rssMb: mem.rss - mem0.rss,
    pssMb: mem.pss - mem0.pss,
    rate: rates[Math.floor(rates.length / 2)] * per,
    cpuMs: cpuUs / 1000 / calls / per,
    size: out.length,
    out,
  };
}

/**
 * Variants of the same work measured in turns (four rounds of 0.75 s each, each round starting
 * from another variant), so that none pays alone for warming up or for a busy moment of the
 * machine. Each run is `{ what, fn }`; it gets `calls`, `cpuUs` (this process and the processes
 * under it: Chromium, LibreOffice) and its last output `out`.
 */
async function inTurns(label, runs) {
  for (const run of runs) {
    Object.assign(run, { calls: 0, cpuUs: 0 });
    const warm = Date.now();
    while (Date.now() - warm < 500) run.out = await run.fn();
  }
  for (let round = 0; round < 4; round++) {
    for (let k = 0; k < runs.length; k++) {
      const run = runs[(k + round) % runs.length];
      const cpuUsed = cpuCounter();
      const start = Date.now();
      while (Date.now() - start < 750) {
        run.out = await run.fn();
        run.calls++;
      }
      run.cpuUs += cpuUsed();
    }
    process.stderr.write(`  ${label}: round ${round + 1}/4 of ${runs.length} variants\n`);
  }
  return runs;
}

/** Rows of variants beside the first: CPU ms and size per page, and how much each differs from the first. */
async function costRowsOf(label, runs) {
  const pages = (await PDFDocument.load(runs[0].out)).getPageCount();
  const cpuMs = (run) => run.cpuUs / 1000 / run.calls;
  const base = runs[0];
  return runs.map((run) => [
    label,
    run.what,
    (cpuMs(run) / pages).toFixed(3),
    `${(run.out.length / 1024 / pages).toFixed(1)} KB`,
    run === base ? '–' : `${(((cpuMs(run) - cpuMs(base)) / cpuMs(base)) * 100).toFixed(0)} %`,
    run === base ? '–' : `${(((run.out.length - base.out.length) / base.out.length) * 100).toFixed(0)} %`,
  ]);
}

async function pdfText(bytes) {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const doc = await pdfjs.getDocument({ data: new Uint8Array(bytes), verbosity: 0, isEvalSupported: false }).promise;
  let text = '';
  for (let n = 1; n <= doc.numPages; n++)
    text += (await (await doc.getPage(n)).getTextContent()).items.map((i) => i.str).join(' ') + '\n';
  return { text: text.replace(/\s+/g, ' '), pages: doc.numPages };
}

/** The largest count of `unit`s that still fits in `pages` pages, by `pagesOf(count)`. */
async function countFor(pages, pagesOf) {
  let lo = 1;
  let hi = 2;
  while ((await pagesOf(hi)) <= pages) hi *= 2;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if ((await pagesOf(mid)) <= pages) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** The bench letter (bench/letter.xml with the example letter's logo), loaded. */
function benchLetter() {
  return loadTemplate(fs.readFileSync(path.join(__dirname, 'letter.xml'), 'utf8'), {
    assets: folderAssets(path.join(root, 'examples/letter')),
  });
}

let reference;
/**
 * The bench letter rendered on this thread for `seconds`, for the end-to-end bench's expectation:
 * letters, seconds, and CPU ms (every thread of this process: V8's helpers collect its garbage).
 * Each call warms up first. The end-to-end bench takes one slice before each slice of load,
 * so both see the machine at the same speed (on a shared machine it drifts within seconds).
 */
async function letterSlice(seconds) {
  // a warm-up each time: the first call's compiles the code, the later ones' let the slice of load
  // before it settle (its garbage collected, caches refilled) so that it does not slow this one
  const warmMs = reference ? 250 : 3000;
  reference ??= await benchLetter();
  const warm = Date.now();
  while (Date.now() - warm < warmMs) await renderTemplate(reference, nextValues());
  const cpu0 = process.cpuUsage();
  const start = process.hrtime.bigint();
  let n = 0;
  let elapsed = 0;
  while (elapsed < seconds) {
    await renderTemplate(reference, nextValues());
    n++;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  }
  const cpu = process.cpuUsage(cpu0);
  return { n, seconds: elapsed, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/**
 * Documents/s of `threads` render threads (the service's pool, in this process, nothing else
 * running), each kept busy: what the machine gives that many threads at once. On a machine whose
 * cores are independent, two threads give twice one thread's rate.
 */
async function poolRate(threads, seconds = 2) {
  const { RenderPool } = require('../dist/src/templates/pool');
  const letter = await benchLetter();
  const pool = new RenderPool(threads);
  try {
    const burst = async (ms) => {
      let n = 0;
      const end = Date.now() + ms;
      await Promise.all(
        Array.from({ length: threads * 2 }, async () => {
          while (Date.now() < end) {
            await pool.render(letter, nextValues());
            n++;
          }
        }),
      );
      return n;
    };
    await burst(3000); // threads started, the template compiled on each, their code optimised
    const start = process.hrtime.bigint();
    const n = await burst(seconds * 1000);
    return n / (Number(process.hrtime.bigint() - start) / 1e9);
  } finally {
    await pool.close();
  }
}

async function run(report) {
  const letter = await benchLetter();
  const flowing = await loadTemplate(fs.readFileSync(path.join(__dirname, 'flowing.xml'), 'utf8'));
  const html = await loadTemplate(fs.readFileSync(path.join(__dirname, 'letter.html'), 'utf8'), {
    assets: folderAssets(path.join(root, 'examples/letter')),
  });
  const docx = officePaths() ? await loadTemplate(fs.readFileSync(path.join(__dirname, 'letter.docx'))) : undefined;
  const typst = typstCompiler();
  try {
    // every document differs (its first paragraph names it), as a letter's recipient does
    let serial = 0;
    const first = () => `Document ${++serial}. ${PARAGRAPH}`;
    const paragraphs = (n) =>
      JSON.stringify(Array.from({ length: n }, (_, i) => ({ text: i === 0 ? first() : PARAGRAPH })));
    const typstFlowing = (n) => typst.pdf(TYPST_FLOWING, { n: String(n), text: PARAGRAPH, first: first() });
    const oursTen = await countFor(10, async (n) =>
      (await PDFDocument.load(await renderTemplate(flowing, { paragraphs: paragraphs(n) }))).getPageCount(),
    );
    const typstTen = await countFor(10, async (n) => (await PDFDocument.load(typstFlowing(n))).getPageCount());

    // the floors print the same filled documents: as many different ones as the rows render, in turn
    const floorValues = Array.from({ length: 64 }, () => nextValues());
    const lazily = (make) => {
      let made;
      return {
        call: async () => (made ??= await make()),
        close: async () => (made ? (await made).close() : undefined),
      };
    };
    const htmlBare = lazily(() => htmlFloor(html, floorValues));
    const wordBare = docx && lazily(() => wordFloor(docx, floorValues));
    const rows = {
      ours: await measure('Paperlink, letter', () => renderTemplate(letter, nextValues())),
      // Chromium and LibreOffice are stopped after their rows, so that each row's memory is its own
      html: await measure('Paperlink HTML template, letter', () => renderTemplate(html, nextValues())).finally(() =>
        printer.close(),
      ),
      htmlFloor: await measure('Chromium alone, letter', async () => (await htmlBare.call()).print()).finally(() =>
        htmlBare.close(),
      ),
      // HTML_PAGES (2) documents at once, each in a browser of its own
      html2: await measure(
        'Paperlink HTML template, letter, 2 at once',
        () => Promise.all([renderTemplate(html, nextValues()), renderTemplate(html, nextValues())]),
        { per: 2 },
      ).finally(() => printer.close()),
      ...(docx && {
        docx: await measure('Paperlink Word template, letter', () => renderTemplate(docx, nextValues())).finally(() =>
          converter.close(),
        ),
        docxFloor: await measure('LibreOffice alone, letter', async () => (await wordBare.call()).convert()).finally(
          () => wordBare.close(),
        ),
      }),
      typst: await measure('Typst, letter', () => typst.pdf(TYPST_LETTER, nextValues())),
      floor: await measure('pdf-lib floor, letter', floorLetter),
      ours10: await measure('Paperlink, 10 pages', () => renderTemplate(flowing, { paragraphs: paragraphs(oursTen) })),
      typst10: await measure('Typst, 10 pages', () => typstFlowing(typstTen)),
    };
    // the outputs say the same: read back, both carry the recipient, the body and (flowing) ten pages
    const checks = [];
    for (const [k, r] of Object.entries(rows)) {
      const read = await pdfText(r.out);
      const letterOk = k.endsWith('10')
        ? read.pages === 10 && read.text.includes('four-week discovery phase')
        : read.text.includes('Dr. Eleanor Vance') &&
          read.text.includes('Kind regards') &&
          read.text.includes('birds do not notice');
      checks.push(
        `${k}: ${letterOk ? 'text checked' : 'TEXT MISSING'} (${read.pages} page${read.pages === 1 ? '' : 's'})`,
      );
    }

    report.section('Rendering on one thread: Paperlink beside Typst and the pdf-lib floor');
    report.line(
      'In this process, one document at a time, a different recipient each letter. CPU ms counts every thread of the process (Typst may use more than one) and the processes it started (Chromium, which prints HTML templates; LibreOffice, which converts Word templates). Memory added: how much this process and the processes it started grew during the row’s run (a browser or LibreOffice started for it included; Chromium and LibreOffice are stopped after their rows), as RSS (pages shared between processes counted in each) and as PSS (each shared page divided among its processes: what they hold together).',
    );
    report.line('');
    const fmt = (r) => [
      r.rate.toFixed(1),
      r.cpuMs.toFixed(2),
      `${(r.size / 1024).toFixed(1)} KB`,
      r.rssMb.toFixed(0),
      r.pssMb.toFixed(0),
    ];
    const none = (what) => [
      'one-page letter',
      `${what}: not measured, LibreOffice is not installed`,
      '',
      '',
      '',
      '',
      '',
    ];
    report.table(
      ['document', 'renderer', 'documents/s', 'CPU ms/document', 'size', 'RSS MB added', 'PSS MB added'],
      [
        ['one-page letter', 'Paperlink (XML template)', ...fmt(rows.ours)],
        ['one-page letter', 'Paperlink (HTML template, printed by Chromium)', ...fmt(rows.html)],
        [
          'one-page letter',
          'floor: the same HTML, filled, printed by the same Chromium alone (a kept page, setContent + pdf)',
          ...fmt(rows.htmlFloor),
        ],
        ['one-page letter', 'Paperlink (HTML template), 2 at once (HTML_PAGES)', ...fmt(rows.html2)],
        docx
          ? ['one-page letter', 'Paperlink (Word template, converted by LibreOffice)', ...fmt(rows.docx)]
          : none('Paperlink (Word template)'),
        docx
          ? [
              'one-page letter',
              'floor: the same .docx, filled, converted by the same warm LibreOffice alone (UNO, in turn)',
              ...fmt(rows.docxFloor),
            ]
          : none('LibreOffice floor'),
        ['one-page letter', 'Typst (typst-ts-node-compiler 0.7)', ...fmt(rows.typst)],
        ['one-page letter', 'pdf-lib floor: standard fonts, nothing embedded, logo decoded once', ...fmt(rows.floor)],
        ['10-page flowing text', 'Paperlink', ...fmt(rows.ours10)],
        ['10-page flowing text', 'Typst', ...fmt(rows.typst10)],
      ],
    );
    report.line(
      `Paperlink ÷ Typst, documents/s: letter **${(rows.ours.rate / rows.typst.rate).toFixed(2)}**, 10 pages **${(rows.ours10.rate / rows.typst10.rate).toFixed(2)}** (target ≥ 1.5 each); by CPU ms: letter ${(rows.typst.cpuMs / rows.ours.cpuMs).toFixed(2)}, 10 pages ${(rows.typst10.cpuMs / rows.ours10.cpuMs).toFixed(2)}.`,
    );
    report.line(
      `HTML template ÷ its floor, documents/s: **${(rows.html.rate / rows.htmlFloor.rate).toFixed(2)}** (target ≥ 0.8); by CPU ms: ${(rows.htmlFloor.cpuMs / rows.html.cpuMs).toFixed(2)}. Two at once ÷ one at a time, documents/s: **${(rows.html2.rate / rows.html.rate).toFixed(2)}** (${os.cpus().length} cores). An HTML template costs ${(rows.html.cpuMs / rows.ours.cpuMs).toFixed(1)}× the CPU of the same letter as an XML template.`,
    );
    if (docx)
      report.line(
        `Word template ÷ its floor, documents/s: **${(rows.docx.rate / rows.docxFloor.rate).toFixed(2)}** (target ≥ 0.8); by CPU ms: ${(rows.docxFloor.cpuMs / rows.docx.cpuMs).toFixed(2)}. A Word template costs ${(rows.docx.cpuMs / rows.ours.cpuMs).toFixed(1)}× the CPU of the same letter as an XML template.`,
      );
    report.line(`Outputs read back with pdf.js: ${checks.join('; ')}.`);

    // what tagging (the structure tree) and hyphenation cost, each alone and together, beside neither
    const variant = async (file, tagged, hyphenate) => {
      const xml = fs
        .readFileSync(path.join(__dirname, file), 'utf8')
        .replace('<document ', `<document tagged="${tagged}" hyphenate="${hyphenate}" `);
      return loadTemplate(xml, { assets: folderAssets(path.join(root, 'examples/letter')) });
    };
    const costRows = [];
    const VARIANTS = [
      [false, false, 'neither'],
      [true, false, 'tagged'],
      [false, true, 'hyphenated'],
      [true, true, 'tagged and hyphenated'],
    ];
    for (const [file, label, values] of [
      ['letter.xml', 'one-page letter', () => nextValues()],
      ['flowing.xml', '10-page flowing text', () => ({ paragraphs: paragraphs(oursTen) })],
    ]) {
      const runs = [];
      for (const [tagged, hyphenate, what] of VARIANTS) {
        const t = await variant(file, tagged, hyphenate);
        runs.push({ what, fn: () => renderTemplate(t, values()) });
      }
      costRows.push(...(await costRowsOf(label, await inTurns(label, runs))));
    }
    report.section('What tagging and hyphenation cost');
    report.line(
      'The same two documents rendered with the structure tree of a tagged PDF and hyphenation each off or on (`<document tagged hyphenate>`), in this process, one at a time, the four variants in turns (four rounds of 0.75 s each, each round in another order). Per page; the last columns compare with neither. By default XML templates are tagged and justified paragraphs hyphenate (the 10-page text is justified, the letter is not).',
    );
    report.line('');
    report.table(['document', 'rendered', 'CPU ms/page', 'size/page', 'CPU vs neither', 'size vs neither'], costRows);

    // what each PDF standard costs beside plain output, per format
    const standardRows = [];
    for (const [label, t, values, standards] of [
      ['one-page letter (XML)', letter, () => nextValues(), PDF_STANDARDS],
      ['10-page flowing text (XML)', flowing, () => ({ paragraphs: paragraphs(oursTen) }), ['PDF/A-2b+PDF/UA-1']],
      ['one-page letter (HTML)', html, () => nextValues(), ['PDF/A-2b']],
      ...(docx ? [['one-page letter (Word)', docx, () => nextValues(), ['PDF/A-2b']]] : []),
    ]) {
      const runs = [undefined, ...standards].map((standard) => ({
        what: standard ?? 'no standard',
        fn: () => renderTemplate(t, values(), { standard }),
      }));
      standardRows.push(...(await costRowsOf(label, await inTurns(label, runs))));
    }
    report.section('What each PDF standard costs');
    report.line(
      'The same documents rendered with each `pdf_standard` beside none, measured as above (in turns; CPU of this process and of Chromium and LibreOffice). XML: the XMP packet, the output intent (a 2 KB sRGB profile) and, for PDF/UA, the tags (on by default anyway). HTML: Chromium’s PDF read and written again by pdf-lib to add them. Word: LibreOffice’s own PDF/A export. Every output of these rows is a kind that test/templates/standards.test.ts checks with veraPDF.',
    );
    report.line('');
    report.table(['document', 'rendered', 'CPU ms/page', 'size/page', 'CPU vs none', 'size vs none'], standardRows);
    return { letter: rows.ours.rate / rows.typst.rate, ten: rows.ours10.rate / rows.typst10.rate };
  } finally {
    typst.cleanup();
    await printer.close();
    await converter.close();
  }
}

module.exports = { run, values, nextValues, letterSlice, poolRate, inTurns, benchLetter };
