// The example reminder of docs/channels.md's payloads (test/tools/channel-messages-doc.test.ts).
import type { ChannelReminder } from "../../../src/channels/messages";
import { speechFor } from "../../../src/i18n/language";
import { linksOfPage } from "../../../src/lib/recipient-links";

const page = "https://reminders.example/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w";
export const EXAMPLE: ChannelReminder = {
  speech: speechFor("en"),
  companyName: "Acme Facilities Ltd",
  itemId: 42,
  itemTitle: "Fire inspection, building 7",
  itemType: "exp",
  documentType: "Inspection certificate",
  expiryDate: "2027-03-14",
  today: "2027-03-11",
  dateFormat: "D MMM YYYY",
  recipientName: "Jana Weber",
  notes: "Keys at the front desk.",
  links: linksOfPage(page),
  template: null,
};
