# Loaded by IRB when the shell sets it up (IRBRC names this file): hbase-shell 2.4.17's Ruby sources (the newest
# hbase-shell Maven Central serves here) call `java_kind_of?`, which the JRuby of HBase 2.6 (9.3, HBASE-28249) no
# longer has; for a Java object it answered what `kind_of?` answers. Without it `user_permission` dies with
# NoMethodError.
class Object
  def java_kind_of?(klass)
    kind_of?(klass)
  end
end
