import org.mustangproject.validator.ZUGFeRDValidator;

/**
 * Validates each PDF named as a Factur-X / ZUGFeRD invoice with Mustang's validator and prints its
 * XML report, one a file, each followed by a line "VALID true" or "VALID false" (the validator's
 * own verdict: the PDF/A-3 file, the XMP and the XML's schema and business rules all passed).
 */
public class FacturxCheck {
  public static void main(String[] files) {
    for (String file : files) {
      ZUGFeRDValidator validator = new ZUGFeRDValidator();
      System.out.println(validator.validate(file));
      System.out.println("VALID " + validator.wasCompletelyValid());
    }
  }
}
