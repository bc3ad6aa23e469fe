// The floors of HTML and Word templates: the same filled document printed by the same Chromium, or
// converted by the same warm LibreOffice, with nothing of ours around it — no Liquid or docx
// filling, no sandbox, no routing of the page's requests, no render thread, no files per
// document kept apart. What our renders cost beyond these is what the service adds.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { fillHtml, pdfOptions } = require('../dist/src/templates/html');
const { chromiumPath } = require('../dist/src/templates/chromium');
const { fillDocx, officePaths } = require('../dist/src/templates/docx');

/**
 * A kept Chromium page printing `documents` (filled HTML, the template's assets inlined as data
 * URLs) in turn with `setContent` + `pdf`, with the options our printer uses.
 */
async function htmlFloor(template, valuesList) {
  const { chromium } = require('playwright-core');
  const filled = [];
  for (const values of valuesList) {
    const f = await fillHtml(template, values, { timeoutMs: 30_000 });
    let html = f.html;
    for (const [name, bytes] of template.assets) {
      const type = /\.png$/i.test(name) ? 'image/png' : /\.css$/i.test(name) ? 'text/css' : 'application/octet-stream';
      html = html.split(`"${name}"`).join(`"data:${type};base64,${Buffer.from(bytes).toString('base64')}"`);
    }
    filled.push({ ...f, html });
  }
  const browser = await chromium.launch({
    executablePath: await chromiumPath(),
    chromiumSandbox: false,
    args: ['--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
  });
  const page = await browser.newPage({ javaScriptEnabled: false });
  let n = 0;
  return {
    print: async () => {
      const next = filled[n++ % filled.length];
      await page.setContent(next.html, { waitUntil: 'load' });
      return page.pdf(pdfOptions(next));
    },
    close: () => browser.close(),
  };
}

/** Python: LibreOffice started as our bridge starts it, then the given .docx files converted in turn, on request. */
const OFFICE = String.raw`
import os, subprocess, sys, time, uno
from com.sun.star.beans import PropertyValue
def prop(name, value):
    p = PropertyValue(); p.Name = name; p.Value = value; return p
soffice, profile, pipe, folder = sys.argv[1:5]
office = subprocess.Popen([soffice, "--headless", "--invisible", "--nologo", "--norestore", "--nodefault", "--nolockcheck",
    "-env:UserInstallation=" + uno.systemPathToFileUrl(profile), "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % pipe],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
local = uno.getComponentContext()
resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
while True:
    try: ctx = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe); break
    except Exception: time.sleep(0.05)
desktop = ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
files = sorted(f for f in os.listdir(folder) if f.endswith(".docx"))
data = uno.Any("[]com.sun.star.beans.PropertyValue", (prop("UseTaggedPDF", True), prop("ExportBookmarks", True)))
n = 0
print("ready", flush=True)
for line in sys.stdin:
    src = os.path.join(folder, files[n % len(files)]); n += 1
    doc = desktop.loadComponentFromURL(uno.systemPathToFileUrl(src), "_blank", 0, (prop("Hidden", True), prop("ReadOnly", True)))
    uno.invoke(doc, "storeToURL", (uno.systemPathToFileUrl(os.path.join(folder, "out.pdf")), (prop("FilterName", "writer_pdf_Export"), prop("FilterData", data))))
    doc.close(True)
    print("ok", flush=True)
os.killpg(office.pid, 9)
`;

/** The warm LibreOffice converting the filled documents in turn, one per `convert()`. */
async function wordFloor(template, valuesList) {
  const { soffice, python } = officePaths();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-floor-office-'));
  valuesList.forEach((values, i) =>
    fs.writeFileSync(path.join(dir, `${String(i).padStart(4, '0')}.docx`), fillDocx(template, values)),
  );
  const child = spawn(
    python,
    ['-c', OFFICE, soffice, path.join(dir, 'profile'), `paperlink_floor_${process.pid}`, dir],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const expect = async (word) => {
    const line = await lines.next();
    if (line.done || line.value !== word) throw new Error(`the LibreOffice floor said ${line.value}`);
  };
  await expect('ready');
  return {
    convert: async () => {
      child.stdin.write('\n');
      await expect('ok');
      return fs.readFileSync(path.join(dir, 'out.pdf'));
    },
    close: async () => {
      child.stdin.end();
      await new Promise((r) => child.once('exit', r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

module.exports = { htmlFloor, wordFloor };
