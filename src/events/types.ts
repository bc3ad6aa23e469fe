/** The event types the service emits. Pure (no imports): the n8n trigger node bundles it. */
export const EVENT_TYPES = [
  'document.generated',
  'document.deleted',
  'magic_link.sent',
  'magic_link.send_failed',
  'magic_link.opened',
  'magic_link.viewed',
  'magic_link.access_denied',
  'magic_link.expired',
  'magic_link.notice_failed',
  'postcard.received',
  'postcard.rendered',
  'postcard.failed',
  'postcard.submitted',
  'postcard.mailed',
  'postcard.returned',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
