/**
 * The Generate form's reading of a template's variable names (issue 69): a label in words, and
 * whether the value is one line, text of several lines, or a JSON list for <each>.
 */
import { valueShape } from '../../src/generate/web';
import { readableLabel } from '../../src/web/forms';

describe('the Generate form reads variable names', () => {
  it('makes a label of words from snake_case, camelCase and dotted names', () => {
    expect(readableLabel('recipient_name')).toBe('Recipient name');
    expect(readableLabel('invoiceTotal')).toBe('Invoice total');
    expect(readableLabel('customer.address.city')).toBe('Customer address city');
    expect(readableLabel('address_line_1')).toBe('Address line 1');
    expect(readableLabel('addressLine2')).toBe('Address line 2');
    expect(readableLabel('customerURL')).toBe('Customer URL');
    expect(readableLabel('HTMLBody')).toBe('HTML body');
    expect(readableLabel('VAT_NUMBER')).toBe('Vat number');
    expect(readableLabel('kunde-straße')).toBe('Kunde straße');
    expect(readableLabel('city')).toBe('City');
    // nothing to make words of: the name as it is
    expect(readableLabel('_')).toBe('_');
  });

  it('gives a textarea to what is likely long or a list, and one line to the rest', () => {
    for (const name of ['recipient_name', 'invoiceTotal', 'address_line_1', 'email_address', 'ip_address', 'city'])
      expect([name, valueShape(name)]).toEqual([name, 'line']);
    for (const name of ['client_address', 'notes', 'message', 'emailBody', 'item.description'])
      expect([name, valueShape(name)]).toEqual([name, 'text']);
    for (const name of ['line_items', 'items', 'price_list', 'tableRows'])
      expect([name, valueShape(name)]).toEqual([name, 'list']);
  });
});
