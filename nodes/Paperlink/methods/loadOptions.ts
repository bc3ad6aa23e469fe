import type { ILoadOptionsFunctions, INodePropertyOptions } from 'n8n-workflow';
import { listAll } from '../transport';

/** The service's templates, by name, for the template pickers. */
export async function getTemplates(this: ILoadOptionsFunctions): Promise<INodePropertyOptions[]> {
  const templates = await listAll.call(this, '/v1/templates');
  return templates.map((t) => ({ name: `${String(t.name)} (${String(t.id)})`, value: String(t.id), description: `${String(t.format ?? '')} template; variables: ${((t.variables as string[] | undefined) ?? []).join(', ') || 'none'}` }));
}
