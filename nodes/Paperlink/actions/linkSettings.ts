/** The Magic Link settings as a person sees them in the spec's web form, and the API object they make. */
import type { IDataObject, IDisplayOptions, IExecuteFunctions, INodeProperties } from 'n8n-workflow';
import { text } from '../text';

// the fields as n8n declares them: one list of data, read top to bottom as the form shows it
// eslint-disable-next-line max-lines-per-function
export function linkFields(show: NonNullable<IDisplayOptions['show']>): INodeProperties[] {
  const displayOptions = { show };
  return [
    {
      displayName: 'Recipient Email',
      name: 'recipientEmail',
      type: 'string',
      placeholder: 'name@email.com',
      default: '',
      required: true,
      description: 'Who gets the link by e-mail',
      displayOptions,
    },
    {
      displayName: 'Authorization Email Address',
      name: 'authEmail',
      type: 'string',
      placeholder: 'name@email.com',
      default: '',
      description: 'The address the recipient must prove before seeing the document; empty: the recipient email',
      displayOptions,
    },
    {
      displayName: 'Authentication Type',
      name: 'authType',
      type: 'options',
      options: [
        { name: 'Email', value: 'email', description: 'A 6-digit code is e-mailed to the authorization address' },
        { name: 'Social', value: 'social', description: 'Sign in with a provider the service is set up for' },
      ],
      default: 'email',
      displayOptions,
    },
    {
      displayName: 'Expire After',
      name: 'expireAfter',
      type: 'number',
      typeOptions: { minValue: 0 },
      default: 24,
      description: 'How long the link works; 0 for no time limit (then a view limit is needed)',
      displayOptions,
    },
    {
      displayName: 'Unit',
      name: 'expireUnit',
      type: 'options',
      options: [
        { name: 'Minutes', value: 'minutes' },
        { name: 'Hours', value: 'hours' },
        { name: 'Days', value: 'days' },
      ],
      default: 'hours',
      displayOptions,
    },
    {
      displayName: 'Timer Starts',
      name: 'timerStarts',
      type: 'options',
      options: [
        { name: 'When Sent', value: 'created' },
        { name: 'When Opened', value: 'opened' },
      ],
      default: 'created',
      displayOptions,
    },
    {
      displayName: 'Expire After N Views',
      name: 'expireAfterViews',
      type: 'number',
      typeOptions: { minValue: 0 },
      default: 0,
      description:
        'How many views the link allows; 0 for no view limit. With a view limit the link also ends 10 days after it was sent.',
      displayOptions,
    },
    {
      displayName: 'Sharing Options',
      name: 'sharing',
      type: 'collection',
      placeholder: 'Add Option',
      default: {},
      displayOptions,
      options: [
        {
          displayName: 'Allow Download',
          name: 'allowDownload',
          type: 'boolean',
          default: true,
          description:
            'Whether the recipient may download the PDF. Off: they see the pages as images in the browser, and no address serves them the PDF (screenshots remain possible).',
        },
        {
          displayName: 'Also Allowed',
          name: 'allowedViewers',
          type: 'string',
          default: '',
          placeholder: 'ann@example.com, @example.com',
          description:
            'Others who may open the link, each proving their own address: e-mail addresses and whole domains written @example.com, separated by commas. The view limit counts everyone.',
        },
        {
          displayName: 'Message',
          name: 'message',
          type: 'string',
          typeOptions: { rows: 3 },
          default: '',
          placeholder: 'Here is the signed lease. Call me with any questions.',
          description:
            'Your words to the recipient (up to 1,000 characters): quoted in the e-mail and shown above the document',
        },
        {
          displayName: 'Notify Email',
          name: 'notifyEmail',
          type: 'string',
          default: '',
          placeholder: 'name@email.com',
          description: "Where the notices below go; empty: the Magic Link app's sender e-mail",
        },
        {
          displayName: 'Notify Me on First View',
          name: 'notifyFirstView',
          type: 'boolean',
          default: false,
          description: 'Whether to e-mail the sender when the link is first viewed, and by whom',
        },
        {
          displayName: 'Notify Me When It Ends',
          name: 'notifyEnd',
          type: 'boolean',
          default: false,
          description: 'Whether to e-mail the sender when the link ends, and why',
        },
        {
          displayName: 'Remind Recipient Hours Before End',
          name: 'remindHours',
          type: 'number',
          typeOptions: { minValue: 0 },
          default: 0,
          description:
            'E-mail the recipient a reminder this many hours before the link ends, if they have not opened it; 0 for none',
        },
        {
          displayName: 'Watermark Position',
          name: 'watermarkPosition',
          type: 'options',
          options: [
            { name: 'Across the Middle', value: 'center' },
            { name: 'At the Bottom', value: 'bottom' },
            { name: 'At the Top', value: 'top' },
            { name: 'Tiled Over the Page', value: 'tiled' },
          ],
          default: 'center',
        },
        {
          displayName: 'Watermark Text',
          name: 'watermarkText',
          type: 'string',
          default: '',
          placeholder: 'Shared with {{email}} on {{viewed_at}}',
          description:
            'Drawn over every page the recipient sees or downloads, filled in for each viewer: {{email}}, {{viewed_at}}, {{ip}}, {{link_id}}',
        },
      ],
    },
  ];
}

/** The `magic_link` settings of the API from the fields above. */
export function linkSettings(ctx: IExecuteFunctions, i: number): IDataObject {
  const settings: IDataObject = {
    recipient_email: text(ctx.getNodeParameter('recipientEmail', i)).trim(),
    auth_type: ctx.getNodeParameter('authType', i, 'email'),
  };
  const authEmail = text(ctx.getNodeParameter('authEmail', i, '')).trim();
  if (authEmail) settings.auth_email = authEmail;
  const amount = Number(ctx.getNodeParameter('expireAfter', i, 0));
  if (amount > 0) {
    const retain = { [text(ctx.getNodeParameter('expireUnit', i, 'hours'))]: amount };
    settings[
      ctx.getNodeParameter('timerStarts', i, 'created') === 'opened' ? 'retain_from_opened' : 'retain_from_created'
    ] = retain;
  }
  const views = Number(ctx.getNodeParameter('expireAfterViews', i, 0));
  if (views > 0) settings.expire_after_n_views = views;
  const sharing = ctx.getNodeParameter('sharing', i, {}) as IDataObject;
  const watermark = text(sharing.watermarkText ?? '').trim();
  if (watermark) settings.watermark = { text: watermark, position: sharing.watermarkPosition ?? 'center' };
  if (sharing.allowDownload === false) settings.allow_download = false;
  const others = text(sharing.allowedViewers ?? '')
    .split(/[\s,;]+/)
    .filter(Boolean);
  if (others.length) settings.allowed_viewers = others;
  if (sharing.notifyFirstView === true || sharing.notifyEnd === true) {
    const email = text(sharing.notifyEmail ?? '').trim();
    settings.notify_sender = {
      on_first_view: sharing.notifyFirstView === true,
      on_end: sharing.notifyEnd === true,
      ...(email ? { email } : {}),
    };
  }
  const message = text(sharing.message ?? '').trim();
  if (message) settings.message = message;
  const remind = Number(sharing.remindHours ?? 0);
  if (remind > 0) settings.remind_before = { hours: remind };
  return settings;
}
