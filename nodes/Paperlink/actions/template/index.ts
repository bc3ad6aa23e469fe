import type { INodeProperties } from 'n8n-workflow';
import * as create from './create.operation';
import * as del from './delete.operation';
import * as get from './get.operation';
import * as list from './list.operation';

export const operations = { list: list.execute, get: get.execute, create: create.execute, delete: del.execute };

export const description: INodeProperties[] = [
  {
    displayName: 'Operation',
    name: 'operation',
    type: 'options',
    noDataExpression: true,
    displayOptions: { show: { resource: ['template'] } },
    options: [
      {
        name: 'Create',
        value: 'create',
        action: 'Create a template',
        description: 'Upload a template (XML, HTML, Word .docx or a fillable PDF) from a binary field',
      },
      { name: 'Delete', value: 'delete', action: 'Delete a template' },
      { name: 'Get', value: 'get', action: 'Get a template', description: 'A template with its variables' },
      { name: 'List', value: 'list', action: 'List templates' },
    ],
    default: 'list',
  },
  ...list.description,
  ...get.description,
  ...create.description,
  ...del.description,
];
