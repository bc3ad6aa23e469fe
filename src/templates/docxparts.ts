/**
 * What a Word template may not hold, because LibreOffice would fetch, read or run something
 * outside the document while converting it: external relationships (linked pictures, attached
 * templates, frames, data sources), field codes that include or link other files (INCLUDEPICTURE,
 * INCLUDETEXT, LINK, DDE, IMPORT, DATABASE, EMBED), OLE objects, ActiveX controls, imported chunks
 * (altChunk), sub-documents, mail-merge data sources, macros and VML pictures named by address.
 * Hyperlinks stay (to http, https and mailto addresses): they are for the reader to click, not
 * for the server to fetch.
 *
 * Parsed, not matched: a .docx is a package, and every part of it that is XML — whatever its name:
 * what [Content_Types].xml declares as XML, what is named .xml or .rels, and anything else that
 * reads as XML — is read by an XML parser, in the encoding it is written in, and the check is on
 * the elements and attributes the parser saw. No spelling, quoting, attribute order, namespace
 * prefix or `>` inside a value can hide a reference from it. A part that is not well-formed, or
 * declares a DOCTYPE or entities (which LibreOffice would expand), is refused.
 *
 * Checked when a template is uploaded and again on every filled document before it is converted
 * (a value put in raw with `{@name}` is XML of its own). Each finding is refused with
 * `422 template_invalid` naming the part and what to remove.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
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
/** Elements that pull in something from outside, whatever their relationship says (by local name). */
const FOREIGN_ELEMENTS = new Set([
  'altChunk',
  'subDoc',
  'object',
  'OLEObject',
  'control',
  'mailMerge',
  'attachedTemplate',
]);
/** Attributes that name a picture or object by address (VML's o:href and src), by local name. */
const ADDRESS_ATTRIBUTES = new Set(['href', 'src']);
/** Field instructions that read a file or another program. */
const FETCHING_FIELDS = /\b(INCLUDEPICTURE|INCLUDETEXT|INCLUDE|LINK|DDE|DDEAUTO|IMPORT|DATABASE|EMBED)\b/i;
const LINKABLE = /^(https?:|mailto:)/i;
/** Parts that are code or objects of another program, by name, whatever they hold. */
const FOREIGN_PARTS = /(^|\/)vbaProject\.bin$|(^|\/)activeX\/|(^|\/)embeddings\//i;

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  // entities are decoded here (decode), so that no entity but XML's own can mean anything
  processEntities: false,
  htmlEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // CDATA is character data: read with the text around it
  cdataPropName: false,
  commentPropName: false,
});

function refuse(part: string, what: string): never {
  throw new TemplateError(
    `The Word template's part ${part} ${what}. A template is converted with no access to other files, programs or the network: remove it in Word (embed pictures instead of linking them; Edit Links to Files, Break Link), then upload the template again.`,
  );
}

/** The text of an attribute value or of character data: XML's five entities and character references decoded; any other entity refused. */
function decode(part: string, text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&([^;&\s]*);?/g, (whole, ref: string) => {
    const named = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[ref];
    if (named && whole.endsWith(';')) return named;
    const numeric = /^#(?:x([0-9a-fA-F]+)|([0-9]+))$/.exec(ref);
    const cp = numeric ? parseInt(numeric[1] ?? numeric[2], numeric[1] ? 16 : 10) : NaN;
    if (whole.endsWith(';') && cp > 0 && cp <= 0x10ffff) return String.fromCodePoint(cp);
    return refuse(part, `holds ${JSON.stringify(whole)}, which is not an XML entity`);
  });
}

/** Encodings an XML part may be written in here (what TextDecoder reads; others are refused). */
const ENCODINGS = new Set([
  'utf-8',
  'utf8',
  'utf-16',
  'utf-16le',
  'utf-16be',
  'us-ascii',
  'iso-8859-1',
  'latin1',
  'windows-1252',
]);

/**
 * A part as text, in the encoding it is written in (a byte order mark, UTF-16's zero bytes, or the
 * declaration's `encoding`), or undefined when it is not text that could be XML.
 */
function asXmlText(part: string, bytes: Uint8Array): string | undefined {
  let encoding = 'utf-8';
  let start = 0;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
  else if (bytes[0] === 0xff && bytes[1] === 0xfe) [encoding, start] = ['utf-16le', 2];
  else if (bytes[0] === 0xfe && bytes[1] === 0xff) [encoding, start] = ['utf-16be', 2];
  else if (bytes[0] === 0x3c && bytes[1] === 0) encoding = 'utf-16le';
  else if (bytes[0] === 0 && bytes[1] === 0x3c) encoding = 'utf-16be';
  let text: string;
  try {
    text = new TextDecoder(encoding, { fatal: true }).decode(bytes.subarray(start));
  } catch {
    return undefined;
  }
  if (!/^\s*</.test(text)) return undefined;
  const declared = /^\s*<\?xml[^>]*\bencoding\s*=\s*["']([^"']+)["']/.exec(text)?.[1]?.toLowerCase();
  if (declared && !ENCODINGS.has(declared))
    refuse(part, `is written in ${declared}, which is not read here: save it as UTF-8`);
  if (declared && encoding === 'utf-8' && !declared.startsWith('utf'))
    text = new TextDecoder(declared).decode(bytes.subarray(start));
  return text;
}

/** The content types [Content_Types].xml declares: by part name (Override) and by extension (Default). */
interface ContentTypes {
  parts: Map<string, string>;
  extensions: Map<string, string>;
}

/** Whether a part is declared as XML, or named as XML parts are. */
function declaredXml(name: string, types: ContentTypes): boolean {
  const extension = name.split('.').pop()?.toLowerCase() ?? '';
  const type = types.parts.get(`/${name}`.toLowerCase()) ?? types.extensions.get(extension) ?? '';
  return /xml/i.test(type) || /\.(xml|rels)$/i.test(name);
}

type Node = Record<string, unknown>;
const ATTRIBUTES = ':@';

/** An element's or attribute's name without its namespace prefix: LibreOffice reads namespaces, not prefixes. */
const local = (name: string) => name.slice(name.indexOf(':') + 1);

/** Reads a part with the parser; refuses one that is not well-formed or declares a DOCTYPE. */
function parse(part: string, text: string): Node[] {
  const valid = XMLValidator.validate(text);
  if (valid !== true) refuse(part, `is not well-formed XML (${valid.err.msg}, line ${valid.err.line})`);
  // the validator accepts a DOCTYPE, and LibreOffice would expand the entities it declares
  if (text.includes('<!DOCTYPE') || text.includes('<!ENTITY')) refuse(part, 'declares a DOCTYPE or entities');
  return parser.parse(text) as Node[];
}

/** Refuses a field instruction that reads a file or another program. */
function checkInstruction(part: string, instruction: string): void {
  const field = FETCHING_FIELDS.exec(instruction);
  if (field) refuse(part, `holds a ${field[1].toUpperCase()} field`);
}

/**
 * What a part's elements, attributes and field instructions must not be. A complex field's
 * instruction is read whole, from its `fldChar` begin to its separate (Word cuts it into runs);
 * a simple field's is its `instr` attribute; an instruction outside any field is read alone.
 */
function checkTree(part: string, nodes: Node[]): void {
  // the fields begun and not ended, innermost last; `open` until their instruction is done
  const fields: { instruction: string; open: boolean }[] = [];
  const innermostOpen = () => [...fields].reverse().find((f) => f.open);
  const walk = (list: Node[], inInstruction: boolean) => {
    for (const node of list) {
      const attrs = (node[ATTRIBUTES] ?? {}) as Record<string, string>;
      for (const [key, children] of Object.entries(node)) {
        if (key === ATTRIBUTES) continue;
        if (key === '#text') {
          if (!inInstruction) continue;
          const text = decode(part, String(children));
          const field = innermostOpen();
          if (field) field.instruction += text;
          else checkInstruction(part, text);
          continue;
        }
        const name = local(key);
        if (FOREIGN_ELEMENTS.has(name)) refuse(part, `holds <${name}>`);
        const values: Record<string, string> = {};
        for (const [attribute, value] of Object.entries(attrs))
          if (!attribute.startsWith('xmlns')) values[local(attribute)] = decode(part, String(value));
        if (name === 'Relationship') checkRelationship(part, values);
        else {
          for (const attribute of ADDRESS_ATTRIBUTES) {
            const address = values[attribute]?.trim();
            if (address && !address.startsWith('#')) refuse(part, `names ${address} in its ${attribute} attribute`);
          }
          if (values.instr !== undefined) checkInstruction(part, values.instr);
        }
        if (name === 'fldChar') {
          const type = values.fldCharType;
          const top = fields.at(-1);
          if (type === 'begin') fields.push({ instruction: '', open: true });
          else if (type === 'separate' && top?.open) {
            top.open = false;
            checkInstruction(part, top.instruction);
          } else if (type === 'end' && top) {
            fields.pop();
            if (top.open) checkInstruction(part, top.instruction);
          }
        }
        if (Array.isArray(children)) walk(children as Node[], name === 'instrText' || inInstruction);
      }
    }
  };
  walk(nodes, false);
  // fields never ended: their instructions as far as they go
  for (const f of fields) if (f.open) checkInstruction(part, f.instruction);
}

function checkRelationship(part: string, attrs: Record<string, string>): void {
  const type = (attrs.Type ?? '').split('/').pop() ?? '';
  const target = (attrs.Target ?? '').trim();
  const external = (attrs.TargetMode ?? '').trim().toLowerCase() === 'external';
  if (FOREIGN_TYPES.has(type)) refuse(part, `holds a relationship of type ${type} (to ${target})`);
  if (!external) {
    if (/^[a-z][a-z0-9+.-]*:|^[\\/]{2}/i.test(target)) refuse(part, `names ${target} as one of its own parts`);
    return;
  }
  if (type === 'hyperlink' && LINKABLE.test(target)) return;
  refuse(part, `links to ${target} (a ${type || 'relationship'} outside the document)`);
}

/** The content types the package declares (an absent or unreadable [Content_Types].xml declares none). */
function contentTypes(zip: PizZip): ContentTypes {
  const types: ContentTypes = { parts: new Map(), extensions: new Map() };
  const file = zip.file('[Content_Types].xml');
  const text = file && asXmlText('[Content_Types].xml', file.asUint8Array());
  if (!text) return types;
  for (const root of parse('[Content_Types].xml', text))
    for (const [, children] of Object.entries(root))
      if (Array.isArray(children))
        for (const entry of children as Node[]) {
          const attrs = (entry[ATTRIBUTES] ?? {}) as Record<string, string>;
          const kind = Object.keys(entry).find((k) => k !== ATTRIBUTES);
          if (kind && local(kind) === 'Override' && attrs.PartName)
            types.parts.set(attrs.PartName.toLowerCase(), attrs.ContentType ?? '');
          if (kind && local(kind) === 'Default' && attrs.Extension)
            types.extensions.set(attrs.Extension.toLowerCase(), attrs.ContentType ?? '');
        }
  return types;
}

/** Throws TemplateError when the document holds anything that LibreOffice would fetch, read or run from outside. */
export function checkDocxParts(zip: PizZip): void {
  const types = contentTypes(zip);
  for (const file of Object.values(zip.files)) {
    if (file.dir) continue;
    const name = file.name;
    if (FOREIGN_PARTS.test(name)) refuse(name, 'is an embedded object, control or macro');
    const bytes = file.asUint8Array();
    const text = asXmlText(name, bytes);
    if (text === undefined) {
      if (declaredXml(name, types)) refuse(name, 'is declared as XML but is not text that XML can be');
      continue;
    }
    checkTree(name, parse(name, text));
  }
}
