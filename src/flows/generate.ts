/**
 * The generate flow: render a template and deliver it to the request's destinations in one
 * activity (it validates, renders, stores, and creates and e-mails the Magic Link), then start the
 * lifecycle of the link it made. The render id comes with the input, so a retried activity finds
 * the document it stored before instead of making a second one.
 */
import type { Caller, Documents, GenerateResult } from '../documents';
import type { Ports } from './ports';

export interface GenerateInput {
  /** The body of POST /v1/generate, as the caller sent it. */
  body: unknown;
  caller: Caller;
  /** `rnd_…`: names the render (and under Temporal the workflow, `generate-<render id>`); made by the activity when absent. */
  renderId?: string;
  /** Under Temporal: the run sets its search attribute PaperlinkDocumentId (TEMPORAL_SEARCH_ATTRIBUTES). */
  indexed?: boolean;
}

export interface GenerateActivities {
  generateDocument(input: GenerateInput): Promise<GenerateResult>;
}

/** The activities on the service's documents (what both engines register). */
export function activitiesForGenerate(documents: Pick<Documents, 'generate'>): GenerateActivities {
  return { generateDocument: (input) => documents.generate(input.body, input.caller, input.renderId) };
}

/** What the generate flow runs on: its activities, and starting another flow (a link's lifecycle). */
export interface GeneratePorts extends Ports<GenerateActivities> {
  /** Starts the lifecycle of a link the render made (Temporal: a child workflow that outlives this one). */
  startLinkLifecycle(linkId: string): Promise<void>;
}

export async function generateFlow(p: GeneratePorts, input: GenerateInput): Promise<GenerateResult> {
  const result = await p.activities.generateDocument(input);
  if (result.magic_link_piece_id) await p.startLinkLifecycle(result.magic_link_piece_id);
  return result;
}
