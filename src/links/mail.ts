/**
 * The e-mails a Magic Link's recipient gets: the link, and the sign-in code. From the
 * organisation's sender (the Magic Link app's sender_email, the organisation as display name), with
 * a footer that says who sent it, why, and how to reach them; the logo attached inline (`cid:`),
 * since mail programs block `data:` images.
 */
import type { Message } from '../mail';
import { html, lines, type Html } from '../html';
import { DATA_IMAGE, type MagicLinkApp } from './app';

const LOGO_CID = 'logo@paperlink';

/** "Ann at Acme", or just "Acme" when the sender's name is the organisation's (a default install). */
export function senderOf(app: MagicLinkApp): string {
  const name = app.sender_name.trim();
  return name && name.toLowerCase() !== app.organization_name.trim().toLowerCase()
    ? `${name} at ${app.organization_name}`
    : app.organization_name;
}

/** The logo as the HTML shows it, and the inline image it needs. */
function logo(app: MagicLinkApp): { img: Html | ''; inline: NonNullable<Message['inline']> } {
  if (!app.logo_url) return { img: '', inline: [] };
  const data = DATA_IMAGE.exec(app.logo_url);
  const tag = (src: string) => html`<img src="${src}" alt="${app.organization_name}" style="max-height:48px" /><br />`;
  if (!data) return { img: tag(app.logo_url), inline: [] };
  const ext = data[2] === 'svg+xml' ? 'svg' : data[2] === 'jpeg' ? 'jpg' : 'png';
  return {
    img: tag(`cid:${LOGO_CID}`),
    inline: [{ cid: LOGO_CID, filename: `logo.${ext}`, contentType: data[1], content: Buffer.from(data[3], 'base64') }],
  };
}

function footer(app: MagicLinkApp, to: string, why: string): { text: string; html: Html } {
  const sender = senderOf(app);
  const lines = [
    // "through Paperlink" says what sent it, unless the sender already says so (the default organisation name)
    `Sent by ${sender}${/\bpaperlink\b/i.test(sender) ? '' : ' through Paperlink'}, to ${to}, because ${why}.`,
    `Questions? Reply to this e-mail or write to ${app.sender_email}.`,
  ];
  return {
    text: `\n--\n${lines.join('\n')}\n`,
    html: html`<hr style="border:none;border-top:1px solid #ddd;margin:24px 0 12px" />
      <p style="color:#777;font-size:12px">${lines[0]}<br />${lines[1]}</p>`,
  };
}

function wrap(body: Html): string {
  return html`<div style="font-family:system-ui,sans-serif;max-width:520px;margin:auto;color:#1a1a1a">${body}</div>`
    .text;
}

export function linkMessage(
  app: MagicLinkApp,
  o: {
    to: string;
    documentName: string;
    url: string;
    limits: string;
    confirm: string;
    /** The sender's own words (the link's `message`), quoted below the first line. */
    message?: string;
    /** A reminder of a link not opened yet, that ends at this date (in words). */
    reminder?: string;
  },
): Message {
  const who = senderOf(app);
  const mark = logo(app);
  const foot = footer(app, o.to, `${app.organization_name} shared a document with this address`);
  const button = html`<a
    href="${o.url}"
    style="display:inline-block;padding:12px 20px;border-radius:6px;background:${app.accent_color};color:#fff;text-decoration:none;font-weight:600"
    >Open the document</a
  >`;
  // the sender's words, as they wrote them (plain text: line breaks kept, nothing else made of it)
  const said = o.message
    ? {
        text: `\n\n${who} wrote:\n${o.message.replace(/^/gm, '> ')}`,
        html: html`<blockquote
          style="margin:0 0 14px;padding:8px 14px;border-left:3px solid ${app.accent_color};color:#333"
        >
          ${lines(o.message)}
        </blockquote>`,
      }
    : { text: '', html: '' };
  return {
    to: o.to,
    from: { name: app.organization_name, address: app.sender_email },
    replyTo: app.sender_email,
    subject: o.reminder
      ? `Reminder: "${o.documentName}" is available until ${o.reminder}`
      : `${who} shared "${o.documentName}" with you`,
    text: `${o.reminder ? 'A reminder: ' : ''}${who} shared the document "${o.documentName}" with you${o.reminder ? `, and you have not opened it yet. The link ends ${o.reminder}` : ''}.${said.text}\n\nOpen it here:\n${o.url}\n\n${o.limits} You will be asked to confirm ${o.confirm}.\n${foot.text}`,
    html: wrap(
      html`${mark.img}
        <p>
          ${o.reminder ? 'A reminder: ' : ''}${who} shared the document <strong>${o.documentName}</strong> with
          you${o.reminder ? `, and you have not opened it yet. The link ends ${o.reminder}` : ''}.
        </p>
        ${said.html}
        <p>${button}</p>
        <p style="color:#555">${o.limits} You will be asked to confirm ${o.confirm}.</p>
        <p style="color:#777;font-size:12px">
          If the button does not work, paste this address into your browser:<br />${o.url}
        </p>
        ${foot.html}`,
    ),
    inline: mark.inline,
  };
}

export function codeMessage(
  app: MagicLinkApp,
  o: { to: string; documentName: string; code: string; minutes: number },
): Message {
  const mark = logo(app);
  const foot = footer(app, o.to, `someone asked for a code to open "${o.documentName}" with this address`);
  const ignore = `It works for ${o.minutes} minutes. If you did not ask for it, ignore this e-mail.`;
  return {
    to: o.to,
    from: { name: app.organization_name, address: app.sender_email },
    replyTo: app.sender_email,
    // not the code: lock screens and mail lists show subjects
    subject: `Your code for "${o.documentName}"`,
    text: `Your code is ${o.code}\n\nType it on the page you opened to see "${o.documentName}". ${ignore}\n${foot.text}`,
    html: wrap(
      html`${mark.img}
        <p>Your code for <strong>${o.documentName}</strong> is</p>
        <p style="font-size:28px;letter-spacing:6px;font-weight:700">${o.code}</p>
        <p style="color:#555">${ignore}</p>
        ${foot.html}`,
    ),
    inline: mark.inline,
  };
}

/** What the sender hears of a link (notify_sender): a short plain note from the service, to the sender's address. */
export function senderNotice(
  app: MagicLinkApp,
  o: { to: string; subject: string; lines: string[]; url?: string },
): Message {
  const foot = footer(app, o.to, 'a Magic Link was set to tell this address what happens to it');
  return {
    to: o.to,
    from: { name: app.organization_name, address: app.sender_email },
    subject: o.subject,
    text: `${o.lines.join('\n\n')}${o.url ? `\n\n${o.url}` : ''}\n${foot.text}`,
    html: wrap(
      html`${o.lines.map((l) => html`<p>${l}</p>`)}${o.url ? html`<p><a href="${o.url}">${o.url}</a></p>` : ''}
      ${foot.html}`,
    ),
  };
}
