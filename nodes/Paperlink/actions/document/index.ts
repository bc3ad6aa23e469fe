import type { INodeProperties } from 'n8n-workflow';
import * as del from './delete.operation';
import * as download from './download.operation';
import * as generate from './generate.operation';
import * as get from './get.operation';
import * as list from './list.operation';

export const operations = {
  generate: generate.execute,
  get: get.execute,
  download: download.execute,
  list: list.execute,
  delete: del.execute,
};

export const description: INodeProperties[] = [
  {
    displayName: 'Operation',
    name: 'operation',
    type: 'options',
    noDataExpression: true,
    displayOptions: { show: { resource: ['document'] } },
    options: [
      { name: 'Delete', value: 'delete', action: 'Delete a document' },
      { name: 'Download', value: 'download', action: 'Download a document', description: 'The PDF as binary data' },
      {
        name: 'Generate',
        value: 'generate',
        action: 'Generate a document',
        description: 'Fill a template, store the PDF and/or share it by Magic Link',
      },
      { name: 'Get', value: 'get', action: 'Get a document', description: 'A document with its Magic Links' },
      { name: 'List', value: 'list', action: 'List documents', description: 'Documents, newest first' },
    ],
    default: 'generate',
  },
  ...generate.description,
  ...get.description,
  ...download.description,
  ...list.description,
  ...del.description,
];
