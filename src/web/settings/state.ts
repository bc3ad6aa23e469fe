/**
 * What the parts of the Settings page share: the state the page is drawn in (the form that was
 * sent, why it was refused, a secret to show once), and what each part's routes are given.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Service } from '../../service';
import type { Failure } from '../context';
import type { Form } from '../forms';
import { errorNotice, raw, secretNotice } from '../html';

/** A part of the page that a form answers to; its notices are shown there. */
export type SettingsPart = 'credentials' | 'app' | 'providers' | 'webhooks' | 'storage' | 'partner';

export interface SettingsState {
  section?: SettingsPart;
  error?: Failure;
  form?: Form;
  secret?: { title: string; value: string; hint: string };
  status?: number;
}

/** What a part's routes need: the service, the page answering a refused form, the redirect showing a new secret once. */
export interface SettingsRoutes {
  web: FastifyInstance;
  service: Service;
  page: (req: FastifyRequest, reply: FastifyReply, s: SettingsState) => Promise<FastifyReply>;
  redirectWithSecret: (
    reply: FastifyReply,
    section: SettingsPart,
    secret: NonNullable<SettingsState['secret']>,
  ) => FastifyReply;
}

/** The `checked` attribute of a checkbox that is on. */
export const checked = (on: boolean) => on && raw(' checked');

/** The form of `section` as it was sent, when the page answers it; empty otherwise. */
export function formOf(s: SettingsState, section: SettingsPart): Form {
  return s.section === section ? (s.form ?? {}) : {};
}

/** The error and the new secret of `section`, when the page answers its form. */
export function notices(s: SettingsState, section: SettingsPart) {
  return (
    s.section === section && [
      errorNotice(s.error),
      s.secret && secretNotice(s.secret.title, s.secret.value, s.secret.hint),
    ]
  );
}
