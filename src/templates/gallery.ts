/**
 * The starter gallery: templates made to look like a paid product's (examples/gallery/), each in
 * the XML layout language and in HTML + Liquid, filled by the same sample values, set in the fonts
 * beside them (Inter, Source Serif 4, Playfair Display; SIL Open Font License). Using one copies it
 * into the user's templates as a new template of its own, with its files and sample values; the
 * gallery itself is never changed.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { NotFoundError, ValidationError } from '../errors';
import { packageRoot } from '../paths';
import { folderAssets, type AssetResolver } from './index';
import type { Renderer } from './pool';
import type { TemplateInfo, TemplateStore } from './store';

export type GalleryFormat = 'xml' | 'html';

export interface GalleryEntry {
  /** Its file names under examples/gallery/: `<key>.xml`, `<key>.html`, `<key>.json` (the sample values). */
  key: string;
  name: string;
  description: string;
}

export const GALLERY: readonly GalleryEntry[] = [
  { key: 'invoice', name: 'Invoice', description: 'A4. Line items that break across pages, totals, notes.' },
  { key: 'letter', name: 'Letter', description: 'US Letter. Letterhead, a serif body, the signature kept with it.' },
  { key: 'receipt', name: 'Receipt', description: 'A5. The amount paid, what was bought and how it was paid.' },
  { key: 'certificate', name: 'Certificate', description: 'Landscape. A framed certificate with two signature lines.' },
  {
    key: 'postcard',
    name: 'Postcard',
    description: '6 × 4 in. A full-bleed front; message, stamp and address behind.',
  },
];

export const GALLERY_FORMATS: readonly GalleryFormat[] = ['xml', 'html'];

/** The gallery's folder: its templates, sample values, images, style sheet and fonts. */
export const galleryDir = (): string => path.join(packageRoot(), 'examples', 'gallery');

/** A gallery entry by key; `not_found` for any other. */
export function galleryEntry(key: string): GalleryEntry {
  const entry = GALLERY.find((e) => e.key === key);
  if (!entry) throw new NotFoundError('gallery template', key);
  return entry;
}

const samples = new Map<string, Record<string, string>>();

/** An entry's sample values: what its previews, thumbnail and copies are filled with (read once). */
export function gallerySample(key: string): Record<string, string> {
  const entry = galleryEntry(key);
  let sample = samples.get(entry.key);
  if (!sample) {
    const file = path.join(galleryDir(), `${entry.key}.json`);
    samples.set(entry.key, (sample = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>));
  }
  return { ...sample };
}

/** An entry's template file in one format, with the resolver of the files it names. */
export async function galleryTemplate(
  key: string,
  format: GalleryFormat,
): Promise<{ source: Uint8Array; assets: AssetResolver }> {
  const entry = galleryEntry(key);
  if (!GALLERY_FORMATS.includes(format))
    throw new ValidationError(`The gallery has each template as ${GALLERY_FORMATS.join(' or ')}.`, [
      { field: 'format', message: `must be one of ${GALLERY_FORMATS.join(', ')}`, code: 'invalid' },
    ]);
  const source = new Uint8Array(await fs.readFile(path.join(galleryDir(), `${entry.key}.${format}`)));
  return { source, assets: folderAssets(galleryDir()) };
}

/** Copies an entry into the user's templates: a new template, version 1, with its files and sample values. */
export async function useGalleryTemplate(
  store: TemplateStore,
  key: string,
  format: GalleryFormat,
  name?: string,
): Promise<TemplateInfo> {
  const entry = galleryEntry(key);
  return store.create({
    ...(await galleryTemplate(key, format)),
    name: name?.trim() || (format === 'html' ? `${entry.name} (HTML)` : entry.name),
    sample: gallerySample(key),
  });
}

/** The gallery as the API lists it. */
export function galleryList() {
  return {
    object: 'list' as const,
    data: GALLERY.map((e) => ({
      object: 'gallery_template' as const,
      ...e,
      formats: [...GALLERY_FORMATS],
      sample_values: gallerySample(e.key),
    })),
  };
}

/** An entry's XML version filled with its sample values: what its thumbnail is drawn from. */
export async function galleryPdf(renderer: Renderer, key: string): Promise<Uint8Array> {
  const { source, assets } = await galleryTemplate(key, 'xml');
  return renderer.render(await renderer.load(source, { assets }), gallerySample(key));
}
