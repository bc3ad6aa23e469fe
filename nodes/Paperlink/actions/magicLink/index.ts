import type { INodeProperties } from 'n8n-workflow';
import * as create from './create.operation';
import * as expire from './expire.operation';
import * as get from './get.operation';
import * as list from './list.operation';

export const operations = { create: create.execute, get: get.execute, list: list.execute, expire: expire.execute };

export const description: INodeProperties[] = [
  {
    displayName: 'Operation',
    name: 'operation',
    type: 'options',
    noDataExpression: true,
    displayOptions: { show: { resource: ['magicLink'] } },
    options: [
      {
        name: 'Create',
        value: 'create',
        action: 'Share a document by magic link',
        description: 'E-mail an expiring link to an existing document',
      },
      { name: 'Expire', value: 'expire', action: 'Expire a magic link', description: 'Revoke the link now' },
      {
        name: 'Get',
        value: 'get',
        action: 'Get a magic link',
        description: 'Status, views used and left, expiry, access log',
      },
      {
        name: 'List',
        value: 'list',
        action: 'List magic links',
        description: 'Links newest first, by status, document or recipient',
      },
    ],
    default: 'create',
  },
  ...create.description,
  ...get.description,
  ...list.description,
  ...expire.description,
];
