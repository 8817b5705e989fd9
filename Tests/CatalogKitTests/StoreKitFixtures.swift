import CatalogTestSupport
import Testing

/// Hand-written `.storekit` files in the shapes Xcode wrote them, version by version, and the
/// catalog source each one imports to.
enum StoreKitFixtures {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var storekit: String
        var plist: String
        var testDescription: String { name }
    }

    /// Xcode 12: one consumable, one subscription; no offers but the introductory one.
    static let version1 = Case(
        name: "version 1",
        storekit: """
            {
              "identifier" : "8B5B3C6B",
              "nonRenewingSubscriptions" : [

              ],
              "products" : [
                {
                  "displayPrice" : "0.99",
                  "familyShareable" : false,
                  "internalID" : "6F1B2A10",
                  "localizations" : [
                    {
                      "description" : "A pile of gold",
                      "displayName" : "Gold",
                      "locale" : "en_US"
                    }
                  ],
                  "productID" : "com.example.game.gold",
                  "referenceName" : "Gold",
                  "type" : "Consumable"
                }
              ],
              "settings" : {

              },
              "subscriptionGroups" : [
                {
                  "id" : "21482000",
                  "localizations" : [

                  ],
                  "name" : "premium",
                  "subscriptions" : [
                    {
                      "adHocOffers" : [

                      ],
                      "displayPrice" : "4.99",
                      "familyShareable" : false,
                      "groupNumber" : 1,
                      "internalID" : "2C69E906",
                      "introductoryOffer" : null,
                      "localizations" : [

                      ],
                      "productID" : "com.example.game.premium.monthly",
                      "recurringSubscriptionPeriod" : "P1M",
                      "referenceName" : "Premium Monthly",
                      "subscriptionGroupID" : "21482000",
                      "type" : "RecurringSubscription"
                    }
                  ]
                }
              ],
              "version" : {
                "major" : 1,
                "minor" : 2
              }
            }
            """,
        plist: plist(
            """
            <dict>
            \t<key>app</key>
            \t<string>com.example.game</string>
            \t<key>products</key>
            \t<array>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.gold</string>
            \t\t\t<key>type</key>
            \t\t\t<string>consumable</string>
            \t\t\t<key>referenceName</key>
            \t\t\t<string>Gold</string>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>displayPrice</key>
            \t\t\t\t<string>0.99</string>
            \t\t\t\t<key>familyShareable</key>
            \t\t\t\t<false/>
            \t\t\t\t<key>localizations</key>
            \t\t\t\t<array>
            \t\t\t\t\t<dict>
            \t\t\t\t\t\t<key>description</key>
            \t\t\t\t\t\t<string>A pile of gold</string>
            \t\t\t\t\t\t<key>displayName</key>
            \t\t\t\t\t\t<string>Gold</string>
            \t\t\t\t\t\t<key>locale</key>
            \t\t\t\t\t\t<string>en_US</string>
            \t\t\t\t\t</dict>
            \t\t\t\t</array>
            \t\t\t</dict>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.premium.monthly</string>
            \t\t\t<key>type</key>
            \t\t\t<string>auto-renewable</string>
            \t\t\t<key>referenceName</key>
            \t\t\t<string>Premium Monthly</string>
            \t\t\t<key>subscription</key>
            \t\t\t<dict>
            \t\t\t\t<key>group</key>
            \t\t\t\t<string>premium</string>
            \t\t\t\t<key>period</key>
            \t\t\t\t<string>P1M</string>
            \t\t\t\t<key>rank</key>
            \t\t\t\t<integer>1</integer>
            \t\t\t</dict>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>displayPrice</key>
            \t\t\t\t<string>4.99</string>
            \t\t\t\t<key>familyShareable</key>
            \t\t\t\t<false/>
            \t\t\t</dict>
            \t\t</dict>
            \t</array>
            </dict>
            """))

    /// Xcode 13: a non-consumable and a non-renewing subscription, test settings, an
    /// introductory and a promotional (ad hoc) offer.
    static let version2 = Case(
        name: "version 2",
        storekit: """
            {
              "identifier" : "0D4D641A",
              "nonRenewingSubscriptions" : [
                {
                  "displayPrice" : "9.99",
                  "familyShareable" : false,
                  "internalID" : "5550A0B3",
                  "localizations" : [ ],
                  "productID" : "com.example.game.season1",
                  "referenceName" : "Season 1 Pass",
                  "type" : "NonRenewingSubscription"
                }
              ],
              "products" : [
                {
                  "displayPrice" : "2.99",
                  "familyShareable" : true,
                  "internalID" : "7B3E9D18",
                  "localizations" : [ ],
                  "productID" : "com.example.game.levels",
                  "referenceName" : "All Levels",
                  "type" : "NonConsumable"
                }
              ],
              "settings" : {
                "_compatibilityTimeRate" : 1,
                "_storeKitErrors" : [ { "current" : null, "enabled" : false, "name" : "Load Products" } ]
              },
              "subscriptionGroups" : [
                {
                  "id" : "A1B2C3D4",
                  "localizations" : [ ],
                  "name" : "vip",
                  "subscriptions" : [
                    {
                      "adHocOffers" : [
                        {
                          "displayPrice" : "0.99",
                          "internalID" : "9C4D2A77",
                          "numberOfPeriods" : 1,
                          "offerID" : "comeback",
                          "paymentMode" : "payAsYouGo",
                          "referenceName" : "Come back",
                          "subscriptionPeriod" : "P1M"
                        }
                      ],
                      "codeOffers" : [ ],
                      "displayPrice" : "29.99",
                      "familyShareable" : false,
                      "groupNumber" : 2,
                      "internalID" : "5A1C0F42",
                      "introductoryOffer" : {
                        "internalID" : "1E2F3A4B",
                        "paymentMode" : "free",
                        "subscriptionPeriod" : "P1W"
                      },
                      "localizations" : [ ],
                      "productID" : "com.example.game.vip.yearly",
                      "recurringSubscriptionPeriod" : "P1Y",
                      "referenceName" : "VIP Yearly",
                      "subscriptionGroupID" : "A1B2C3D4",
                      "type" : "RecurringSubscription"
                    }
                  ]
                }
              ],
              "version" : { "major" : 2, "minor" : 0 }
            }
            """,
        plist: plist(
            """
            <dict>
            \t<key>app</key>
            \t<string>com.example.game</string>
            \t<key>products</key>
            \t<array>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.season1</string>
            \t\t\t<key>type</key>
            \t\t\t<string>non-renewing</string>
            \t\t\t<key>referenceName</key>
            \t\t\t<string>Season 1 Pass</string>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>displayPrice</key>
            \t\t\t\t<string>9.99</string>
            \t\t\t\t<key>familyShareable</key>
            \t\t\t\t<false/>
            \t\t\t</dict>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.levels</string>
            \t\t\t<key>type</key>
            \t\t\t<string>non-consumable</string>
            \t\t\t<key>referenceName</key>
            \t\t\t<string>All Levels</string>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>displayPrice</key>
            \t\t\t\t<string>2.99</string>
            \t\t\t\t<key>familyShareable</key>
            \t\t\t\t<true/>
            \t\t\t</dict>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.vip.yearly</string>
            \t\t\t<key>type</key>
            \t\t\t<string>auto-renewable</string>
            \t\t\t<key>referenceName</key>
            \t\t\t<string>VIP Yearly</string>
            \t\t\t<key>subscription</key>
            \t\t\t<dict>
            \t\t\t\t<key>group</key>
            \t\t\t\t<string>vip</string>
            \t\t\t\t<key>period</key>
            \t\t\t\t<string>P1Y</string>
            \t\t\t\t<key>rank</key>
            \t\t\t\t<integer>2</integer>
            \t\t\t</dict>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>displayPrice</key>
            \t\t\t\t<string>29.99</string>
            \t\t\t\t<key>familyShareable</key>
            \t\t\t\t<false/>
            \t\t\t\t<key>introductoryOffer</key>
            \t\t\t\t<dict>
            \t\t\t\t\t<key>paymentMode</key>
            \t\t\t\t\t<string>free</string>
            \t\t\t\t\t<key>subscriptionPeriod</key>
            \t\t\t\t\t<string>P1W</string>
            \t\t\t\t</dict>
            \t\t\t\t<key>adHocOffers</key>
            \t\t\t\t<array>
            \t\t\t\t\t<dict>
            \t\t\t\t\t\t<key>displayPrice</key>
            \t\t\t\t\t\t<string>0.99</string>
            \t\t\t\t\t\t<key>numberOfPeriods</key>
            \t\t\t\t\t\t<integer>1</integer>
            \t\t\t\t\t\t<key>offerID</key>
            \t\t\t\t\t\t<string>comeback</string>
            \t\t\t\t\t\t<key>paymentMode</key>
            \t\t\t\t\t\t<string>payAsYouGo</string>
            \t\t\t\t\t\t<key>referenceName</key>
            \t\t\t\t\t\t<string>Come back</string>
            \t\t\t\t\t\t<key>subscriptionPeriod</key>
            \t\t\t\t\t\t<string>P1M</string>
            \t\t\t\t\t</dict>
            \t\t\t\t</array>
            \t\t\t</dict>
            \t\t</dict>
            \t</array>
            </dict>
            """))

    /// Xcode 14: account-specific settings, subscription group localizations, offer codes.
    static let version3 = Case(
        name: "version 3",
        storekit: """
            {
              "identifier" : "E9A1B51A",
              "nonRenewingSubscriptions" : [],
              "products" : [],
              "settings" : {
                "_applicationInternalID" : "1234567890",
                "_developerTeamID" : "ABCDE12345",
                "_failTransactionsEnabled" : false,
                "_locale" : "en_US",
                "_storefront" : "USA"
              },
              "subscriptionGroups" : [
                {
                  "id" : "20881234",
                  "localizations" : [
                    {
                      "description" : "",
                      "displayName" : "Game Plus",
                      "locale" : "en_US"
                    }
                  ],
                  "name" : "plus",
                  "subscriptions" : [
                    {
                      "adHocOffers" : [],
                      "codeOffers" : [
                        {
                          "displayPrice" : "0.00",
                          "eligibility" : [ "new", "existing" ],
                          "internalID" : "C0DE0FFE",
                          "isStackable" : true,
                          "paymentMode" : "free",
                          "referenceName" : "Press",
                          "subscriptionPeriod" : "P1M"
                        }
                      ],
                      "displayPrice" : "1.99",
                      "familyShareable" : true,
                      "groupNumber" : 1,
                      "internalID" : "0F0F0F0F",
                      "introductoryOffer" : null,
                      "localizations" : [
                        {
                          "description" : "Everything, monthly",
                          "displayName" : "Plus",
                          "locale" : "en_US"
                        }
                      ],
                      "productID" : "com.example.game.plus",
                      "recurringSubscriptionPeriod" : "P1M",
                      "referenceName" : "Plus",
                      "subscriptionGroupID" : "20881234",
                      "type" : "RecurringSubscription"
                    }
                  ]
                }
              ],
              "version" : {
                "major" : 3,
                "minor" : 0
              }
            }
            """,
        plist: plist(
            """
            <dict>
            \t<key>app</key>
            \t<string>com.example.game</string>
            \t<key>products</key>
            \t<array>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.plus</string>
            \t\t\t<key>type</key>
            \t\t\t<string>auto-renewable</string>
            \t\t\t<key>referenceName</key>
            \t\t\t<string>Plus</string>
            \t\t\t<key>subscription</key>
            \t\t\t<dict>
            \t\t\t\t<key>group</key>
            \t\t\t\t<string>plus</string>
            \t\t\t\t<key>period</key>
            \t\t\t\t<string>P1M</string>
            \t\t\t\t<key>rank</key>
            \t\t\t\t<integer>1</integer>
            \t\t\t</dict>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>displayPrice</key>
            \t\t\t\t<string>1.99</string>
            \t\t\t\t<key>familyShareable</key>
            \t\t\t\t<true/>
            \t\t\t\t<key>localizations</key>
            \t\t\t\t<array>
            \t\t\t\t\t<dict>
            \t\t\t\t\t\t<key>description</key>
            \t\t\t\t\t\t<string>Everything, monthly</string>
            \t\t\t\t\t\t<key>displayName</key>
            \t\t\t\t\t\t<string>Plus</string>
            \t\t\t\t\t\t<key>locale</key>
            \t\t\t\t\t\t<string>en_US</string>
            \t\t\t\t\t</dict>
            \t\t\t\t</array>
            \t\t\t\t<key>groupLocalizations</key>
            \t\t\t\t<array>
            \t\t\t\t\t<dict>
            \t\t\t\t\t\t<key>description</key>
            \t\t\t\t\t\t<string></string>
            \t\t\t\t\t\t<key>displayName</key>
            \t\t\t\t\t\t<string>Game Plus</string>
            \t\t\t\t\t\t<key>locale</key>
            \t\t\t\t\t\t<string>en_US</string>
            \t\t\t\t\t</dict>
            \t\t\t\t</array>
            \t\t\t\t<key>codeOffers</key>
            \t\t\t\t<array>
            \t\t\t\t\t<dict>
            \t\t\t\t\t\t<key>displayPrice</key>
            \t\t\t\t\t\t<string>0.00</string>
            \t\t\t\t\t\t<key>eligibility</key>
            \t\t\t\t\t\t<array>
            \t\t\t\t\t\t\t<string>new</string>
            \t\t\t\t\t\t\t<string>existing</string>
            \t\t\t\t\t\t</array>
            \t\t\t\t\t\t<key>isStackable</key>
            \t\t\t\t\t\t<true/>
            \t\t\t\t\t\t<key>paymentMode</key>
            \t\t\t\t\t\t<string>free</string>
            \t\t\t\t\t\t<key>referenceName</key>
            \t\t\t\t\t\t<string>Press</string>
            \t\t\t\t\t\t<key>subscriptionPeriod</key>
            \t\t\t\t\t\t<string>P1M</string>
            \t\t\t\t\t</dict>
            \t\t\t\t</array>
            \t\t\t</dict>
            \t\t</dict>
            \t</array>
            </dict>
            """))

    /// Xcode 15 and later: app policies, win-back offers, an empty reference name.
    static let version4 = Case(
        name: "version 4",
        storekit: """
            {
              "appPolicies" : {
                "eula" : "",
                "policies" : [ { "locale" : "en_US", "policyText" : "", "policyURL" : "" } ]
              },
              "identifier" : "4C3F1AB8",
              "nonRenewingSubscriptions" : [],
              "products" : [
                {
                  "displayPrice" : "0.99",
                  "familyShareable" : false,
                  "internalID" : "6759309295",
                  "localizations" : [
                    { "description" : "Hints", "displayName" : "Hints", "locale" : "en_US" },
                    { "description" : "Tipps", "displayName" : "Tipps", "locale" : "de_DE" }
                  ],
                  "productID" : "com.example.game.hints",
                  "referenceName" : "",
                  "type" : "Consumable"
                }
              ],
              "settings" : {
                "_applicationInternalID" : "6759309295",
                "_developerTeamID" : "XXXXXXXXXX",
                "_lastSynchronizedDate" : 0
              },
              "subscriptionGroups" : [
                {
                  "id" : "B2D7E1A0",
                  "localizations" : [],
                  "name" : "plus",
                  "subscriptions" : [
                    {
                      "adHocOffers" : [],
                      "codeOffers" : [],
                      "displayPrice" : "19.99",
                      "familyShareable" : false,
                      "groupNumber" : 1,
                      "internalID" : "11223344",
                      "introductoryOffer" : null,
                      "localizations" : [],
                      "productID" : "com.example.game.plus.yearly",
                      "recurringSubscriptionPeriod" : "P1Y",
                      "referenceName" : "Plus Yearly",
                      "subscriptionGroupID" : "B2D7E1A0",
                      "type" : "RecurringSubscription",
                      "winbackOffers" : [
                        {
                          "displayPrice" : "9.99",
                          "internalID" : "55667788",
                          "numberOfPeriods" : 1,
                          "paymentMode" : "payUpFront",
                          "subscriptionPeriod" : "P1Y"
                        }
                      ]
                    }
                  ]
                }
              ],
              "version" : {
                "major" : 4,
                "minor" : 0
              }
            }
            """,
        plist: plist(
            """
            <dict>
            \t<key>app</key>
            \t<string>com.example.game</string>
            \t<key>products</key>
            \t<array>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.hints</string>
            \t\t\t<key>type</key>
            \t\t\t<string>consumable</string>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>displayPrice</key>
            \t\t\t\t<string>0.99</string>
            \t\t\t\t<key>familyShareable</key>
            \t\t\t\t<false/>
            \t\t\t\t<key>localizations</key>
            \t\t\t\t<array>
            \t\t\t\t\t<dict>
            \t\t\t\t\t\t<key>description</key>
            \t\t\t\t\t\t<string>Hints</string>
            \t\t\t\t\t\t<key>displayName</key>
            \t\t\t\t\t\t<string>Hints</string>
            \t\t\t\t\t\t<key>locale</key>
            \t\t\t\t\t\t<string>en_US</string>
            \t\t\t\t\t</dict>
            \t\t\t\t\t<dict>
            \t\t\t\t\t\t<key>description</key>
            \t\t\t\t\t\t<string>Tipps</string>
            \t\t\t\t\t\t<key>displayName</key>
            \t\t\t\t\t\t<string>Tipps</string>
            \t\t\t\t\t\t<key>locale</key>
            \t\t\t\t\t\t<string>de_DE</string>
            \t\t\t\t\t</dict>
            \t\t\t\t</array>
            \t\t\t</dict>
            \t\t</dict>
            \t\t<dict>
            \t\t\t<key>id</key>
            \t\t\t<string>com.example.game.plus.yearly</string>
            \t\t\t<key>type</key>
            \t\t\t<string>auto-renewable</string>
            \t\t\t<key>referenceName</key>
            \t\t\t<string>Plus Yearly</string>
            \t\t\t<key>subscription</key>
            \t\t\t<dict>
            \t\t\t\t<key>group</key>
            \t\t\t\t<string>plus</string>
            \t\t\t\t<key>period</key>
            \t\t\t\t<string>P1Y</string>
            \t\t\t\t<key>rank</key>
            \t\t\t\t<integer>1</integer>
            \t\t\t</dict>
            \t\t\t<key>metadata</key>
            \t\t\t<dict>
            \t\t\t\t<key>displayPrice</key>
            \t\t\t\t<string>19.99</string>
            \t\t\t\t<key>familyShareable</key>
            \t\t\t\t<false/>
            \t\t\t\t<key>winbackOffers</key>
            \t\t\t\t<array>
            \t\t\t\t\t<dict>
            \t\t\t\t\t\t<key>displayPrice</key>
            \t\t\t\t\t\t<string>9.99</string>
            \t\t\t\t\t\t<key>numberOfPeriods</key>
            \t\t\t\t\t\t<integer>1</integer>
            \t\t\t\t\t\t<key>paymentMode</key>
            \t\t\t\t\t\t<string>payUpFront</string>
            \t\t\t\t\t\t<key>subscriptionPeriod</key>
            \t\t\t\t\t\t<string>P1Y</string>
            \t\t\t\t\t</dict>
            \t\t\t\t</array>
            \t\t\t</dict>
            \t\t</dict>
            \t</array>
            </dict>
            """))

    static let all = [version1, version2, version3, version4]
}
