package local.hbasemigration.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HexFormat;

/** JSON in and out (Spark's own Jackson: nothing shipped for it), row keys and values as hex. */
final class Json {
  static final ObjectMapper MAPPER = new ObjectMapper();
  private static final HexFormat HEX = HexFormat.of();

  private Json() {}

  static JsonNode parse(String text) {
    try {
      return MAPPER.readTree(text);
    } catch (IOException e) {
      throw new IllegalArgumentException("not JSON: " + e.getMessage(), e);
    }
  }

  static String write(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  static ArrayNode array() {
    return MAPPER.createArrayNode();
  }

  static String hex(byte[] bytes) {
    return HEX.formatHex(bytes);
  }

  static String hex(byte[] array, int offset, int length) {
    return HEX.formatHex(array, offset, offset + length);
  }

  static byte[] unhex(String text) {
    return text == null ? new byte[0] : HEX.parseHex(text);
  }

  /** A field as a long, or {@code fallback} when it is absent or null. */
  static long getLong(JsonNode node, String field, long fallback) {
    JsonNode v = node.get(field);
    return v == null || v.isNull() ? fallback : v.asLong();
  }

  static double getDouble(JsonNode node, String field, double fallback) {
    JsonNode v = node.get(field);
    return v == null || v.isNull() ? fallback : v.asDouble();
  }

  static String getText(JsonNode node, String field) {
    JsonNode v = node.get(field);
    return v == null || v.isNull() ? null : v.asText();
  }
}
