import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { listAll } from '../../transport';
import { listFields, listFilters, listLimit } from '../common';

export const description: INodeProperties[] = listFields({ resource: ['document'], operation: ['list'] }, [
  {
    displayName: 'Name Contains',
    name: 'search',
    type: 'string',
    default: '',
    description: 'Only documents whose name contains this text, ignoring case',
  },
]);

export async function execute(this: IExecuteFunctions, i: number): Promise<INodeExecutionData[]> {
  return (await listAll.call(this, '/v1/documents', listLimit(this, i), listFilters(this, i))).map((json) => ({
    json,
    pairedItem: { item: i },
  }));
}
