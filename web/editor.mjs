// The web app's template editor (bundled by `npm run build` into dist/src/web/editor.js, served as
// /assets/editor.js): CodeMirror over the source, the sample values, and the preview re-rendered
// by the server (src/templates/preview.ts) each time the typing stops. Without JavaScript the
// form still saves: the textarea and the sample fields are what is sent.
import { basicSetup, EditorView } from 'codemirror';
import { html } from '@codemirror/lang-html';
import { xml } from '@codemirror/lang-xml';
import { lintGutter, setDiagnostics } from '@codemirror/lint';
import * as pdfjs from '/assets/pdfjs/pdf.min.mjs';

pdfjs.GlobalWorkerOptions.workerSrc = '/assets/pdfjs/pdf.worker.min.mjs';
// one pdf.js worker for every preview: starting one per document costs more than drawing it
const worker = new pdfjs.PDFWorker();
let shown;

const form = document.getElementById('editor');
const textarea = document.getElementById('f-source');
const samples = document.getElementById('samples');
const pages = document.getElementById('pages');
const status = document.getElementById('status');
const problems = document.getElementById('problems');
/** How long the typing must stop before the preview is asked for. */
const QUIET_MS = 100;

// the editor grows with its source (the page scrolls, not a region of its own: WCAG's keyboard
// access to scrolled regions); it lives in a shadow root: there CodeMirror's styles are constructed style sheets, which
// the web app's Content-Security-Policy (style-src 'self', no inline <style>) allows
const look = EditorView.theme({
  '&': { border: '1px solid #e2e5ea', borderRadius: '8px', fontSize: '.85rem', background: '#fff' },
  '&.cm-focused': { outline: '2px solid #1a63d6' },
});

let view;
if (textarea) {
  const host = document.createElement('div');
  host.className = 'source-editor';
  textarea.after(host);
  const root = host.attachShadow({ mode: 'open' });
  view = new EditorView({
    doc: textarea.value,
    root,
    parent: root,
    extensions: [
      basicSetup,
      look,
      form.dataset.format === 'html' ? html() : xml(),
      lintGutter(),
      EditorView.lineWrapping,
      EditorView.contentAttributes.of({ 'aria-label': 'Template source' }),
      EditorView.updateListener.of((u) => {
        if (!u.docChanged) return;
        textarea.value = u.state.doc.toString();
        soon();
      }),
    ],
  });
  textarea.hidden = true;
}

/** The sample values typed; an empty field is none (the preview shows the default, or the name). */
const sampleValues = () =>
  Object.fromEntries(
    [...samples.querySelectorAll('input[data-variable]')]
      .filter((i) => i.value !== '')
      .map((i) => [i.dataset.variable, i.value]),
  );

let added = 0;
/** A sample field for each variable the source has now, keeping what was typed into those it had. */
function showVariables(variables) {
  const typed = sampleValues();
  const known = new Set(variables);
  for (const field of samples.querySelectorAll('.field[data-variable]'))
    if (!known.has(field.dataset.variable)) field.remove();
  for (const name of variables) {
    if (samples.querySelector(`.field[data-variable="${CSS.escape(name)}"]`)) continue;
    const field = document.createElement('div');
    field.className = 'field';
    field.dataset.variable = name;
    // ids by place, as the server's: unique whatever the names are
    const id = `f-sample-added-${++added}`;
    const label = document.createElement('label');
    label.htmlFor = id;
    label.textContent = name;
    const input = document.createElement('input');
    input.id = id;
    input.name = `sample.${name}`;
    input.type = 'text';
    input.dataset.variable = name;
    input.value = typed[name] ?? '';
    field.append(label, input);
    samples.append(field);
  }
  samples.querySelector('.none')?.toggleAttribute('hidden', variables.length > 0);
}

/** Draws the PDF's pages into #pages, replacing what was there only once they are drawn (no flicker). */
async function draw(bytes, mine) {
  const doc = await pdfjs.getDocument({ data: bytes, isEvalSupported: false, worker }).promise;
  const drawn = [];
  try {
    const width = Math.max(200, pages.clientWidth - 2);
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n);
      const scale = width / page.getViewport({ scale: 1 }).width;
      const viewport = page.getViewport({ scale: scale * (window.devicePixelRatio || 1) });
      const canvas = document.createElement('canvas');
      canvas.width = viewport.width;
      canvas.height = viewport.height;
      canvas.style.width = '100%';
      canvas.setAttribute('role', 'img');
      canvas.setAttribute('aria-label', `Page ${n} of ${doc.numPages}`);
      canvas.dataset.page = String(n);
      await page.render({ canvasContext: canvas.getContext('2d'), viewport }).promise;
      drawn.push(canvas);
      // a newer preview was asked for meanwhile: this one is not shown
      if (mine !== asked) break;
    }
  } catch (err) {
    void doc.destroy();
    throw err;
  }
  if (mine !== asked) {
    void doc.destroy();
    return undefined;
  }
  pages.replaceChildren(...drawn);
  // the document shown before is let go (its pages are drawn; its data stays in the worker until then)
  void shown?.destroy();
  shown = doc;
  return doc.numPages;
}

/** The errors of the last preview, listed and (those with a line) marked in the source. */
function showProblems(error) {
  problems.replaceChildren();
  const diagnostics = [];
  for (const d of error ? (error.details?.length ? error.details : [{ message: error.message }]) : []) {
    const li = document.createElement('li');
    const at = /^template:(\d+):(\d+)$/.exec(d.field ?? '');
    li.textContent = at
      ? `Line ${at[1]}, column ${at[2]}: ${d.message}`
      : d.field
        ? `${d.field}: ${d.message}`
        : d.message;
    problems.append(li);
    if (at && view) {
      const doc = view.state.doc;
      const line = doc.line(Math.min(Number(at[1]), doc.lines));
      const from = Math.min(line.from + Number(at[2]) - 1, line.to);
      diagnostics.push({ from, to: Math.min(from + 1, line.to), severity: 'error', message: d.message });
    }
  }
  problems.hidden = !problems.children.length;
  if (view) view.dispatch(setDiagnostics(view.state, diagnostics));
}

let timer;
let asked = 0;
/** When the source or a sample value last changed. */
let edited = performance.now();
function soon() {
  edited = performance.now();
  clearTimeout(timer);
  timer = setTimeout(refresh, QUIET_MS);
}

/** Asks the server for the preview of what is in the editor now; an answer to an older question is dropped. */
async function refresh() {
  const mine = ++asked;
  const started = performance.now();
  const typed = edited;
  status.textContent = 'Rendering…';
  form.dataset.state = 'rendering';
  try {
    const res = await fetch(form.dataset.preview, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        _csrf: form.querySelector('input[name="_csrf"]').value,
        ...(textarea ? { source: textarea.value } : {}),
        sample_values: sampleValues(),
      }),
    });
    if (!res.headers.get('content-type')?.includes('application/json')) {
      if (mine !== asked) return;
      status.textContent =
        res.status === 401
          ? 'You are signed out: sign in again (in another tab, to keep what you typed), then type on.'
          : `The preview could not be shown (HTTP ${res.status}).`;
      form.dataset.state = 'error';
      return;
    }
    const answer = await res.json();
    if (mine !== asked) return;
    if (!res.ok) {
      showProblems(answer.error);
      status.textContent = 'The preview shows the last version that rendered. Fix what is listed below the source.';
      form.dataset.state = 'error';
      return;
    }
    showProblems(undefined);
    showVariables(answer.variables);
    const answered = performance.now();
    const bytes = Uint8Array.from(atob(answer.pdf), (c) => c.charCodeAt(0));
    const count = await draw(bytes, mine);
    if (count === undefined) return;
    // how long the server and the drawing took, for the browser test's record
    const now = performance.now();
    form.dataset.timing = JSON.stringify({
      fromKeystroke: Math.round(now - typed),
      server: Math.round(answered - started),
      draw: Math.round(now - answered),
    });
    if (mine !== asked) return;
    const warned = answer.warnings.length
      ? ` ${answer.warnings.length} warning(s): ${answer.warnings.map((w) => w.message).join('; ')}`
      : '';
    status.textContent = `Preview: ${count} page${count === 1 ? '' : 's'}.${warned}`;
    form.dataset.state = 'ready';
    form.dataset.rendered = String(mine);
  } catch (err) {
    if (mine !== asked) return;
    status.textContent = `The preview could not be shown (${err.message}). It is tried again as you type.`;
    form.dataset.state = 'error';
  }
}

samples.addEventListener('input', soon);
refresh();
