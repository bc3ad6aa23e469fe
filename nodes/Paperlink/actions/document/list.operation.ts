import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { listAll } from '../../transport';
import { listFields } from '../common';

const show = { resource: ['document'], operation: ['list'] };

export const description: INodeProperties[] = [
  ...listFields(show),
  {
    displayName: 'Filters',
    name: 'filters',
    type: 'collection',
    placeholder: 'Add Filter',
    default: {},
    displayOptions: { show },
    options: [{ displayName: 'Name Contains', name: 'search', type: 'string', default: '', description: 'Only documents whose name contains this text, ignoring case' }],
  },
];

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
  const limit = this.getNodeParameter('returnAll', i, false) ? undefined : Number(this.getNodeParameter('limit', i, 50));
  const { search } = this.getNodeParameter('filters', i, {}) as { search?: string };
  return (await listAll.call(this, '/v1/documents', limit, search?.trim() ? { search: search.trim() } : {})).map((json) => ({ json, pairedItem: { item: i } }));
}
