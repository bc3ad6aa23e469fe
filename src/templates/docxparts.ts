/**
 * What a Word template may not hold, because LibreOffice would fetch, read or run something
 * outside the document while converting it: external relationships (linked pictures, attached
 * templates, frames, data sources), field codes that include or link other files (INCLUDEPICTURE,
 * INCLUDETEXT, LINK, DDE, IMPORT, DATABASE, EMBED), OLE objects, ActiveX controls, imported chunks
 * (altChunk), sub-documents, mail-merge data sources, macros and VML pictures named by address.
 * Hyperlinks stay (to http, https and mailto addresses): they are for the reader to click, not
 * for the server to fetch.
 *
 * Checked when a template is uploaded and again on every filled document before it is converted
 * (a value put in raw with `{@name}` is XML of its own). Each finding is refused with
 * `422 template_invalid` naming the part and what to remove.
 */
import type PizZip from 'pizzip';
import { TemplateError } from '../errors';

/** Relationship types (the last segment of the type URI) that bring in content from elsewhere. */
const FOREIGN_TYPES = new Set([
  'oleObject',
  'package',
  'control',
  'aFChunk',
  'subDocument',
  'attachedTemplate',
  'frame',
]);
/** Field instructions that read a file or another program. */
const FETCHING_FIELDS = /\b(INCLUDEPICTURE|INCLUDETEXT|INCLUDE|LINK|DDE|DDEAUTO|IMPORT|DATABASE|EMBED)\b/i;
const LINKABLE = /^(https?:|mailto:)/i;
/**
 * Names are matched by their local part with any prefix (or none): a document may bind the
 * WordprocessingML namespace to any prefix, and LibreOffice reads namespaces, not prefixes.
 */
const P = '(?:[\\w.-]+:)?';
const VALUE = `\\s*=\\s*(?:"([^"]*)"|'([^']*)')`;
/** Attributes that name a picture or object by address (VML's o:href and src). */
const ADDRESS_ATTRIBUTE = new RegExp(`\\s${P}(href|src)${VALUE}`, 'g');
/** Elements that pull in something from outside, whatever their relationship says. */
const FOREIGN_ELEMENTS = new RegExp(
  `<${P}(altChunk|subDoc|object|OLEObject|control|mailMerge|attachedTemplate)[\\s/>]`,
);
const INSTRUCTION = new RegExp(`<${P}instrText\\b[^>]*>([^<]*)</${P}instrText>|\\s${P}instr${VALUE}`, 'g');
const RELATIONSHIP = new RegExp(`<${P}Relationship\\b([^>]*)>`, 'g');

function refuse(part: string, what: string): never {
  throw new TemplateError(
    `The Word template's part ${part} ${what}. A template is converted with no access to other files, programs or the network: remove it in Word (embed pictures instead of linking them; Edit Links to Files, Break Link), then upload the template again.`,
  );
}

/** The text of an attribute value or of character data: entities and character references decoded. */
function decode(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, ref: string) => {
    if (ref[0] === '#') {
      const cp = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : '';
    }
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[ref.toLowerCase()] ?? '';
  });
}

/** A part's XML without comments and processing instructions, CDATA written as plain (escaped) text. */
function plain(text: string): string {
  return text
    .replace(/<!--[\s\S]*?-->|<\?[\s\S]*?\?>/g, '')
    .replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, (_, c: string) =>
      c.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'),
    );
}

/** Throws TemplateError when the document holds anything that LibreOffice would fetch, read or run from outside. */
export function checkDocxParts(zip: PizZip): void {
  for (const file of Object.values(zip.files)) {
    if (file.dir) continue;
    const name = file.name;
    if (/(^|\/)vbaProject\.bin$|(^|\/)activeX\/|(^|\/)embeddings\//i.test(name))
      refuse(name, 'is an embedded object, control or macro');
    if (!/\.(xml|rels)$/i.test(name)) continue;
    const text = plain(file.asText());
    if (name.endsWith('.rels')) checkRelationships(name, text);
    else checkPart(name, text);
  }
}

function checkRelationships(name: string, text: string): void {
  for (const m of text.matchAll(RELATIONSHIP)) {
    const attr = (a: string) => {
      const found = new RegExp(`\\b${a}${VALUE}`).exec(m[1]);
      return found ? decode(found[1] ?? found[2]).trim() : undefined;
    };
    const type = (attr('Type') ?? '').split('/').pop() ?? '';
    const target = attr('Target') ?? '';
    const external = (attr('TargetMode') ?? '').toLowerCase() === 'external';
    if (FOREIGN_TYPES.has(type)) refuse(name, `holds a relationship of type ${type} (to ${target})`);
    if (!external) {
      if (/^[a-z][a-z0-9+.-]*:|^[\\/]{2}/i.test(target)) refuse(name, `names ${target} as one of its own parts`);
      continue;
    }
    if (type === 'hyperlink' && LINKABLE.test(target)) continue;
    refuse(name, `links to ${target} (a ${type || 'relationship'} outside the document)`);
  }
}

function checkPart(name: string, text: string): void {
  const foreign = FOREIGN_ELEMENTS.exec(text);
  if (foreign) refuse(name, `holds <${foreign[1]}>`);
  // a field's instruction may be cut into several runs: read them together
  let instructions = '';
  for (const m of text.matchAll(INSTRUCTION)) instructions += m[1] ?? ` ${m[2] ?? m[3]} `;
  const field = FETCHING_FIELDS.exec(decode(instructions));
  if (field) refuse(name, `holds a ${field[1].toUpperCase()} field`);
  for (const m of text.matchAll(ADDRESS_ATTRIBUTE)) {
    const address = decode(m[2] ?? m[3]).trim();
    if (address && !address.startsWith('#')) refuse(name, `names ${address} in its ${m[1]} attribute`);
  }
}
