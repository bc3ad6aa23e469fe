import type { INodeProperties } from 'n8n-workflow';
import * as get from './get.operation';
import * as list from './list.operation';

export const operations = { list: list.execute, get: get.execute };

export const description: INodeProperties[] = [
  {
    displayName: 'Operation',
    name: 'operation',
    type: 'options',
    noDataExpression: true,
    displayOptions: { show: { resource: ['template'] } },
    options: [
      { name: 'List', value: 'list', action: 'List templates' },
      { name: 'Get', value: 'get', action: 'Get a template', description: 'A template with its variables' },
    ],
    default: 'list',
  },
  ...list.description,
  ...get.description,
];
