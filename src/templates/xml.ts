/**
 * Reads template XML into a small element tree with source locations, refusing everything an
 * attacker could use against the parser: DOCTYPE and entity declarations (entity expansion and
 * external entities), absurd nesting, and oversized sources.
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { SourceLocation, TemplateError } from '../errors';

export const MAX_TEMPLATE_BYTES = 10 * 1024 * 1024;
export const MAX_NESTING = 48;
export const MAX_ATTRIBUTES = 64;
const MANY_ATTRIBUTES = new RegExp(
  `<[A-Za-z][^\\s>/]*(?:\\s+[^\\s=>/]+\\s*=\\s*(?:"[^"]*"|'[^']*')){${MAX_ATTRIBUTES + 1}}`,
);

export interface XmlElement {
  kind: 'element';
  name: string;
  attrs: Record<string, string>;
  children: XmlNode[];
  loc: SourceLocation;
}

export interface XmlText {
  kind: 'text';
  text: string;
  /** Location of the element that holds the text (the parser does not report text positions). */
  loc: SourceLocation;
}

export type XmlNode = XmlElement | XmlText;

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  captureMetaData: true,
  processEntities: false,
  htmlEntities: false,
  commentPropName: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  maxNestedTags: MAX_NESTING + 2,
});
const META = XMLParser.getMetaDataSymbol() as unknown as string;

function locator(source: string): (index: number) => SourceLocation {
  const starts = [0];
  for (let i = 0; i < source.length; i++) if (source.charCodeAt(i) === 10) starts.push(i + 1);
  return (index: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= index) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: index - starts[lo] + 1 };
  };
}

const ENTITY = /&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z][A-Za-z0-9]*);?/g;
const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes the five XML entities and numeric character references in one pass. */
function decodeEntities(text: string, loc: SourceLocation): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY, (whole, ref: string) => {
    if (!whole.endsWith(';')) {
      throw new TemplateError(`"&" must be written as "&amp;" (found ${JSON.stringify(whole)}).`, loc);
    }
    if (ref.startsWith('#')) {
      const cp = ref[1] === 'x' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isFinite(cp) || cp <= 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        throw new TemplateError(`${whole} is not a valid character reference.`, loc);
      }
      return String.fromCodePoint(cp);
    }
    const named = NAMED_ENTITIES[ref];
    if (named === undefined) {
      throw new TemplateError(
        `Unknown entity ${whole}. Templates know only &amp; &lt; &gt; &quot; &apos; and numeric references like &#233;.`,
        loc,
      );
    }
    return named;
  });
}

type RawNode = Record<string, unknown>;

/** Parses template XML. Throws TemplateError with a line and column wherever the parser gives one. */
export function readXml(source: string): XmlElement {
  if (Buffer.byteLength(source, 'utf8') > MAX_TEMPLATE_BYTES) {
    throw new TemplateError(
      `The template is larger than ${MAX_TEMPLATE_BYTES / 1024 / 1024} MB. Ship large images as assets beside the template instead of data URIs.`,
    );
  }
  const at = locator(source);
  const doctype = /<!(DOCTYPE|ENTITY)/i.exec(source);
  if (doctype) {
    throw new TemplateError(
      'DOCTYPE and ENTITY declarations are not allowed in templates (they can expand without bound or read files). Remove them; use &#NNN; for special characters.',
      at(doctype.index),
    );
  }
  // the parser checks each attribute against the others: thousands on one element take it minutes
  const crowded = MANY_ATTRIBUTES.exec(source);
  if (crowded) {
    throw new TemplateError(
      `An element has more than ${MAX_ATTRIBUTES} attributes. No template element takes that many: remove the extra ones.`,
      at(crowded.index),
    );
  }
  // the parser first: it stops at the nesting limit after a few tags, where the validator would read
  // all 8 MB of unclosed ones and list every one in its message (seconds of a render thread)
  let raw: RawNode[] | undefined;
  let unread: unknown;
  try {
    raw = parser.parse(source) as RawNode[];
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    if (/nest/i.test(msg))
      throw new TemplateError(`Elements are nested deeper than ${MAX_NESTING} levels. Flatten the template.`);
    unread = err;
  }
  // the parser is lenient: what it read is taken only if the XML is well-formed
  const valid = XMLValidator.validate(source);
  if (valid !== true) {
    throw new TemplateError(`The XML is not well-formed: ${valid.err.msg}`, {
      line: valid.err.line,
      column: valid.err.col,
    });
  }
  if (!raw) {
    const msg = unread instanceof Error ? unread.message : String(unread);
    throw new TemplateError(`The XML could not be read: ${msg}`, undefined, { cause: unread });
  }
  const roots = raw
    .map((n) => convert(n, at, { line: 1, column: 1 }, 0))
    .filter((n): n is XmlElement => n.kind === 'element');
  if (roots.length !== 1) throw new TemplateError('A template has exactly one root element, <document>.');
  return roots[0];
}

function convert(node: RawNode, at: (i: number) => SourceLocation, parentLoc: SourceLocation, depth: number): XmlNode {
  if (depth > MAX_NESTING) {
    throw new TemplateError(`Elements are nested deeper than ${MAX_NESTING} levels. Flatten the template.`, parentLoc);
  }
  if ('#text' in node) return { kind: 'text', text: decodeEntities(String(node['#text']), parentLoc), loc: parentLoc };
  const name = Object.keys(node).find((k) => k !== ':@');
  if (name === undefined) return { kind: 'text', text: '', loc: parentLoc };
  const meta = (node as Record<string, unknown>)[META] as { startIndex?: number } | undefined;
  const loc = meta?.startIndex !== undefined ? at(meta.startIndex) : parentLoc;
  const rawAttrs = (node[':@'] ?? {}) as Record<string, unknown>;
  const attrs = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(rawAttrs)) attrs[k] = decodeEntities(String(v), loc);
  const children = ((node[name] ?? []) as RawNode[]).map((c) => convert(c, at, loc, depth + 1));
  return { kind: 'element', name, attrs, children, loc };
}
