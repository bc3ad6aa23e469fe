import type { ICredentialType, INodeProperties, Icon } from 'n8n-workflow';

/**
 * A postcard token (`paperlink tokens create --kind postcard`). The Postcard Submit operation sends
 * it in the body to the service's intake; the Postcard Intake Trigger checks incoming requests
 * against it.
 */
export class PaperlinkPostcardToken implements ICredentialType {
  name = 'paperlinkPostcardToken';

  displayName = 'Paperlink Postcard Token';

  icon: Icon = { light: 'file:paperlink.svg', dark: 'file:paperlink.dark.svg' };

  documentationUrl = 'https://github.com/paperlink/n8n-nodes-paperlink#n8n';

  properties: INodeProperties[] = [
    {
      displayName: 'Token',
      name: 'token',
      type: 'string',
      typeOptions: { password: true },
      default: '',
      description: 'The postcard token (starts with plp_); it travels in the body field api_token',
      required: true,
    },
    {
      displayName: 'Intake URL',
      name: 'intakeUrl',
      type: 'string',
      default: 'http://localhost:3000/postcards',
      description: 'Where Postcard Submit posts requests (the service URL and its POSTCARD_PATH). Not used by the Postcard Intake Trigger.',
    },
  ];
}
