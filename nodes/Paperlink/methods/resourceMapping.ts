import type { ILoadOptionsFunctions, ResourceMapperFields } from 'n8n-workflow';
import { idOf, pathOf } from '../actions/common';
import { apiRequest } from '../transport';

/**
 * One merge field per variable of the chosen template. None is required in the editor: a field
 * left empty is not sent, and the service names every variable still missing.
 */
export async function getMergeFields(this: ILoadOptionsFunctions): Promise<ResourceMapperFields> {
  const id = idOf(this, 'template');
  if (!id) return { fields: [] };
  const template = (await apiRequest.call(this, 'GET', pathOf('template', id))) as { variables?: string[] };
  const variables = template.variables ?? [];
  return {
    fields: variables.map((v) => ({
      id: v,
      displayName: v,
      required: false,
      defaultMatch: false,
      display: true,
      type: 'string',
      canBeUsedToMatch: false,
    })),
    emptyFieldsNotice: variables.length ? undefined : 'This template has no merge fields',
  };
}
