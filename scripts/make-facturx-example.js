'use strict';
/**
 * Writes examples/invoice/attachments/factur-x.xml: the example invoice (examples/invoice/sample.json) as a
 * Factur-X 1.0 invoice of the EN 16931 profile (UN/CEFACT Cross Industry Invoice D16B), the XML an
 * accounting system sends beside the merge parameters as the attachment factur-x.xml. Run again
 * when sample.json changes: `node scripts/make-facturx-example.js`. Every amount is the one the PDF
 * prints; the totals are checked against them here, so the two cannot disagree.
 */
const fs = require('node:fs');
const path = require('node:path');

const dir = path.join(__dirname, '..', 'examples', 'invoice');
const sample = JSON.parse(fs.readFileSync(path.join(dir, 'sample.json'), 'utf8'));

const cents = (money) => Math.round(Number(money.replace(/[$,]/g, '')) * 100);
const amount = (c) => (c / 100).toFixed(2);
const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
/** "22 Nov 2026" as CII's date format 102 (YYYYMMDD). */
const date102 = (d) => {
  const t = new Date(`${d} 12:00 UTC`);
  return `${t.getUTCFullYear()}${String(t.getUTCMonth() + 1).padStart(2, '0')}${String(t.getUTCDate()).padStart(2, '0')}`;
};

const rate = sample.tax_rate.replace('%', '');
const lines = JSON.parse(sample.line_items);
let lineTotal = 0;
const items = lines.map((l) => {
  const net = cents(l.amount);
  if (net !== cents(l.unit_price) * Number(l.quantity))
    throw new Error(`line ${l.number}: amount is not quantity × price`);
  lineTotal += net;
  return `    <ram:IncludedSupplyChainTradeLineItem>
      <ram:AssociatedDocumentLineDocument><ram:LineID>${l.number}</ram:LineID></ram:AssociatedDocumentLineDocument>
      <ram:SpecifiedTradeProduct><ram:Name>${esc(l.description)}</ram:Name>${l.detail ? `<ram:Description>${esc(l.detail)}</ram:Description>` : ''}</ram:SpecifiedTradeProduct>
      <ram:SpecifiedLineTradeAgreement><ram:NetPriceProductTradePrice><ram:ChargeAmount>${amount(cents(l.unit_price))}</ram:ChargeAmount></ram:NetPriceProductTradePrice></ram:SpecifiedLineTradeAgreement>
      <ram:SpecifiedLineTradeDelivery><ram:BilledQuantity unitCode="C62">${l.quantity}</ram:BilledQuantity></ram:SpecifiedLineTradeDelivery>
      <ram:SpecifiedLineTradeSettlement>
        <ram:ApplicableTradeTax><ram:TypeCode>VAT</ram:TypeCode><ram:CategoryCode>S</ram:CategoryCode><ram:RateApplicablePercent>${rate}</ram:RateApplicablePercent></ram:ApplicableTradeTax>
        <ram:SpecifiedTradeSettlementLineMonetarySummation><ram:LineTotalAmount>${amount(net)}</ram:LineTotalAmount></ram:SpecifiedTradeSettlementLineMonetarySummation>
      </ram:SpecifiedLineTradeSettlement>
    </ram:IncludedSupplyChainTradeLineItem>`;
});
const discount = cents(sample.discount);
const basis = lineTotal - discount;
const tax = cents(sample.tax);
const check = [
  ['subtotal', lineTotal, cents(sample.subtotal)],
  ['tax', Math.round((basis * Number(rate)) / 100), tax],
  ['total', basis + tax, cents(sample.total)],
];
for (const [what, computed, printed] of check)
  if (computed !== printed) throw new Error(`${what}: ${amount(computed)} computed, ${amount(printed)} printed`);

const [attn, street, cityLine] = sample.client_address.split('\n');
const [, city, state, zip] = /^(.*), ([A-Z]{2}) (\d{5})$/.exec(cityLine);

const xml = `<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100" xmlns:qdt="urn:un:unece:uncefact:data:standard:QualifiedDataType:100" xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100" xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100">
  <rsm:ExchangedDocumentContext>
    <ram:GuidelineSpecifiedDocumentContextParameter><ram:ID>urn:cen.eu:en16931:2017</ram:ID></ram:GuidelineSpecifiedDocumentContextParameter>
  </rsm:ExchangedDocumentContext>
  <rsm:ExchangedDocument>
    <ram:ID>${esc(sample.invoice_number)}</ram:ID>
    <ram:TypeCode>380</ram:TypeCode>
    <ram:IssueDateTime><udt:DateTimeString format="102">${date102(sample.issue_date)}</udt:DateTimeString></ram:IssueDateTime>
    <ram:IncludedNote><ram:Content>${esc(sample.notes)}</ram:Content></ram:IncludedNote>
  </rsm:ExchangedDocument>
  <rsm:SupplyChainTradeTransaction>
${items.join('\n')}
    <ram:ApplicableHeaderTradeAgreement>
      <ram:BuyerReference>${esc(sample.reference)}</ram:BuyerReference>
      <ram:SellerTradeParty>
        <ram:Name>Northwind Studio LLC</ram:Name>
        <ram:SpecifiedLegalOrganization><ram:ID>93-4242123</ram:ID></ram:SpecifiedLegalOrganization>
        <ram:PostalTradeAddress><ram:PostcodeCode>97209</ram:PostcodeCode><ram:LineOne>410 Harbor Street</ram:LineOne><ram:CityName>Portland</ram:CityName><ram:CountryID>US</ram:CountryID><ram:CountrySubDivisionName>OR</ram:CountrySubDivisionName></ram:PostalTradeAddress>
        <ram:URIUniversalCommunication><ram:URIID schemeID="EM">billing@northwind.example</ram:URIID></ram:URIUniversalCommunication>
        <ram:SpecifiedTaxRegistration><ram:ID schemeID="FC">93-4242123</ram:ID></ram:SpecifiedTaxRegistration>
      </ram:SellerTradeParty>
      <ram:BuyerTradeParty>
        <ram:Name>${esc(sample.client_name)}</ram:Name>
        <ram:PostalTradeAddress><ram:PostcodeCode>${zip}</ram:PostcodeCode><ram:LineOne>${esc(street)}</ram:LineOne><ram:LineTwo>${esc(attn)}</ram:LineTwo><ram:CityName>${esc(city)}</ram:CityName><ram:CountryID>US</ram:CountryID><ram:CountrySubDivisionName>${state}</ram:CountrySubDivisionName></ram:PostalTradeAddress>
      </ram:BuyerTradeParty>
    </ram:ApplicableHeaderTradeAgreement>
    <ram:ApplicableHeaderTradeDelivery>
      <ram:ActualDeliverySupplyChainEvent><ram:OccurrenceDateTime><udt:DateTimeString format="102">${date102(sample.issue_date)}</udt:DateTimeString></ram:OccurrenceDateTime></ram:ActualDeliverySupplyChainEvent>
    </ram:ApplicableHeaderTradeDelivery>
    <ram:ApplicableHeaderTradeSettlement>
      <ram:InvoiceCurrencyCode>USD</ram:InvoiceCurrencyCode>
      <ram:SpecifiedTradeSettlementPaymentMeans>
        <ram:TypeCode>30</ram:TypeCode>
        <ram:PayeePartyCreditorFinancialAccount><ram:IBANID>US00NWND000042421234</ram:IBANID></ram:PayeePartyCreditorFinancialAccount>
      </ram:SpecifiedTradeSettlementPaymentMeans>
      <ram:ApplicableTradeTax>
        <ram:CalculatedAmount>${amount(tax)}</ram:CalculatedAmount>
        <ram:TypeCode>VAT</ram:TypeCode>
        <ram:BasisAmount>${amount(basis)}</ram:BasisAmount>
        <ram:CategoryCode>S</ram:CategoryCode>
        <ram:RateApplicablePercent>${rate}</ram:RateApplicablePercent>
      </ram:ApplicableTradeTax>
      <ram:SpecifiedTradeAllowanceCharge>
        <ram:ChargeIndicator><udt:Indicator>false</udt:Indicator></ram:ChargeIndicator>
        <ram:ActualAmount>${amount(discount)}</ram:ActualAmount>
        <ram:Reason>Discount</ram:Reason>
        <ram:CategoryTradeTax><ram:TypeCode>VAT</ram:TypeCode><ram:CategoryCode>S</ram:CategoryCode><ram:RateApplicablePercent>${rate}</ram:RateApplicablePercent></ram:CategoryTradeTax>
      </ram:SpecifiedTradeAllowanceCharge>
      <ram:SpecifiedTradePaymentTerms>
        <ram:Description>Please pay within 30 days by bank transfer, quoting the invoice number.</ram:Description>
        <ram:DueDateDateTime><udt:DateTimeString format="102">${date102(sample.due_date)}</udt:DateTimeString></ram:DueDateDateTime>
      </ram:SpecifiedTradePaymentTerms>
      <ram:SpecifiedTradeSettlementHeaderMonetarySummation>
        <ram:LineTotalAmount>${amount(lineTotal)}</ram:LineTotalAmount>
        <ram:AllowanceTotalAmount>${amount(discount)}</ram:AllowanceTotalAmount>
        <ram:TaxBasisTotalAmount>${amount(basis)}</ram:TaxBasisTotalAmount>
        <ram:TaxTotalAmount currencyID="USD">${amount(tax)}</ram:TaxTotalAmount>
        <ram:GrandTotalAmount>${amount(basis + tax)}</ram:GrandTotalAmount>
        <ram:DuePayableAmount>${amount(basis + tax)}</ram:DuePayableAmount>
      </ram:SpecifiedTradeSettlementHeaderMonetarySummation>
    </ram:ApplicableHeaderTradeSettlement>
  </rsm:SupplyChainTradeTransaction>
</rsm:CrossIndustryInvoice>
`;
fs.mkdirSync(path.join(dir, 'attachments'), { recursive: true });
fs.writeFileSync(path.join(dir, 'attachments', 'factur-x.xml'), xml);
process.stdout.write(
  `wrote ${path.join(dir, 'attachments', 'factur-x.xml')}: ${lines.length} lines, ${amount(basis + tax)} USD due\n`,
);
