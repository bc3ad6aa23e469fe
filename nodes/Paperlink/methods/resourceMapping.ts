import type { ILoadOptionsFunctions, ResourceMapperFields } from 'n8n-workflow';
import { apiRequest } from '../transport';

/** One merge field per variable of the chosen template: every one is required by the service. */
export async function getMergeFields(this: ILoadOptionsFunctions): Promise<ResourceMapperFields> {
  const id = String(this.getNodeParameter('templateId', '') ?? '');
  if (!id) return { fields: [], emptyFieldsNotice: 'Choose a template first' };
  const template = (await apiRequest.call(this, 'GET', `/v1/templates/${encodeURIComponent(id)}`)) as { variables?: string[] };
  const variables = template.variables ?? [];
  return {
    fields: variables.map((v) => ({ id: v, displayName: v, required: true, defaultMatch: false, display: true, type: 'string', canBeUsedToMatch: false })),
    emptyFieldsNotice: variables.length ? undefined : 'This template has no merge fields',
  };
}
