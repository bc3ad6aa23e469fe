import type { INodeProperties } from 'n8n-workflow';
import * as get from './get.operation';
import * as submit from './submit.operation';

export const operations = { submit: submit.execute, get: get.execute };

export const description: INodeProperties[] = [
  {
    displayName: 'Operation',
    name: 'operation',
    type: 'options',
    noDataExpression: true,
    displayOptions: { show: { resource: ['postcard'] } },
    options: [
      {
        name: 'Submit',
        value: 'submit',
        action: 'Submit a postcard request',
        description: 'Post contact, address and custom data to the intake',
      },
      {
        name: 'Get',
        value: 'get',
        action: 'Get a postcard',
        description: 'Status, normalised address, custom data, document',
      },
    ],
    default: 'submit',
  },
  ...submit.description,
  ...get.description,
];
