import type { ILoadOptionsFunctions, ResourceMapperFields } from 'n8n-workflow';
import { idOf, pathOf } from '../actions/common';
import { apiRequest } from '../transport';

/** What GET /v1/templates/:id says of its merge fields. */
interface TemplateVariables {
  variables?: string[];
  optional_variables?: { name: string; default: string }[];
}

/**
 * One merge field per variable of the chosen template. The variables the template declares
 * required (every one but its `optional_variables`, which take a default) are required in the
 * editor too, so n8n marks the node before it runs; an optional one left empty is not sent and
 * takes its default.
 */
export async function getMergeFields(this: ILoadOptionsFunctions): Promise<ResourceMapperFields> {
  const id = idOf(this, 'template');
  if (!id) return { fields: [] };
  const template = (await apiRequest.call(this, 'GET', pathOf('template', id))) as TemplateVariables;
  const variables = template.variables ?? [];
  const optional = new Set((template.optional_variables ?? []).map((v) => v.name));
  return {
    fields: variables.map((v) => ({
      id: v,
      displayName: v,
      required: !optional.has(v),
      defaultMatch: false,
      display: true,
      type: 'string',
      canBeUsedToMatch: false,
    })),
    emptyFieldsNotice: variables.length ? undefined : 'This template has no merge fields',
  };
}
