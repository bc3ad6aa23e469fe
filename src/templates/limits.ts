/**
 * Bounds on the work and memory of one render, checked before the work is done or as it runs:
 * an image's decoded pixels (at upload and at render), pages per document, list items expanded
 * in one document (nested lists multiply), and the text of the merge values. Each has a default
 * and an environment variable to raise it (config.ts); every refusal is `422 render_limit_exceeded`
 * with the limit as `details[].field`, the value found, and the variable that raises it.
 */
import { DEFAULT_LIMITS, type RenderLimits } from '../config';
import { ValidationError } from '../errors';

const VARIABLE: Record<keyof RenderLimits, string> = {
  imagePixels: 'RENDER_MAX_IMAGE_PIXELS',
  pages: 'RENDER_MAX_PAGES',
  items: 'RENDER_MAX_ITEMS',
  text: 'RENDER_MAX_TEXT',
  processMemoryMb: 'RENDER_PROCESS_MEMORY_MB',
};
const FIELD: Record<keyof RenderLimits, string> = {
  imagePixels: 'image_pixels',
  pages: 'pages',
  items: 'list_items',
  text: 'text_length',
  processMemoryMb: 'render_memory_mb',
};

let current: RenderLimits = { ...DEFAULT_LIMITS };

/** The limits this process (or render thread) applies; the service sets them from its configuration. */
export function setRenderLimits(limits: Partial<RenderLimits>): void {
  current = { ...DEFAULT_LIMITS, ...limits };
}

export function renderLimits(): RenderLimits {
  return current;
}

/** A render (or an upload) would exceed a limit; it names the limit, what was found and how to raise it. */
export class RenderLimitError extends ValidationError {
  constructor(field: string, message: string) {
    super(message, [{ field, message, code: 'render_limit_exceeded' }], 'render_limit_exceeded');
  }
}

/** Throws when `value` is over the limit `which`; `what` says what was counted, e.g. `Image "logo.png" (20000 × 20000 pixels)`. */
export function checkLimit(which: keyof RenderLimits, value: number, what: string): void {
  const limit = current[which];
  if (value <= limit) return;
  throw new RenderLimitError(
    FIELD[which],
    `${what} is over the limit of ${limit.toLocaleString('en-US')} (${value.toLocaleString('en-US')}). Make it smaller, or raise ${VARIABLE[which]}.`,
  );
}
