// Inbound reports shaped like the ones real mail systems send (docs/bounces.md): DSNs from Gmail,
// Outlook/Exchange Online and Postfix, and ARF complaints from Yahoo and AOL. Each is a function of
// the failed recipient and the bounce address the original carried (X-Bounce-Address), so unit
// tests, worker tests and e2e tests build them for a real delivery. CRLF line ends, as on the wire.

export interface Sample {
  /** The recipient the original message went to. */
  rcpt: string;
  /** The original's bounce address (bounces+<token>@domain). */
  bounce: string;
  /** The original's From and Message-ID. */
  from?: string;
  messageId?: string;
}

const crlf = (text: string) => text.replace(/\r?\n/g, "\r\n");

function originalHeaders(s: Sample): string {
  return `Return-Path: <${s.bounce.replace(/^bounces\+[^@]+/, "cf-bounce")}>
From: "Demo Company" <${s.from ?? "reminders@expiry-reminder.example"}>
To: ${s.rcpt}
Subject: Reminder: Boiler inspection is due on 31/01/2027
Message-ID: ${s.messageId ?? "<ORIG1234@expiry-reminder.example>"}
Date: Fri, 27 Nov 2026 08:00:00 +0000
MIME-Version: 1.0
X-Bounce-Address: <${s.bounce}>
Content-Type: text/plain; charset=utf-8`;
}

/** Gmail's mailer-daemon: a permanent failure, 5.1.1, the original as message/rfc822. */
export const gmailHardBounce = (s: Sample) =>
  crlf(`Delivered-To: ${s.bounce}
Return-Path: <>
From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>
To: ${s.bounce}
Auto-Submitted: auto-replied
Subject: Delivery Status Notification (Failure)
Message-ID: <6563a1f2.050a0220.gmail-dsn-1@mx.google.com>
Date: Fri, 27 Nov 2026 08:00:03 -0800 (PST)
MIME-Version: 1.0
Content-Type: multipart/report; boundary="000000000000d9b1a2060b1c2e3f"; report-type=delivery-status

--000000000000d9b1a2060b1c2e3f
Content-Type: multipart/related; boundary="000000000000d9b1a6060b1c2e40"

--000000000000d9b1a6060b1c2e40
Content-Type: text/html; charset="UTF-8"

<html><body><h2>Address not found</h2><p>Your message wasn't delivered to <b>${s.rcpt}</b> because the address couldn't be found.</p></body></html>
--000000000000d9b1a6060b1c2e40--
--000000000000d9b1a2060b1c2e3f
Content-Type: message/delivery-status

Reporting-MTA: dns; googlemail.com
Received-From-MTA: dns; expiry-reminder.example
Arrival-Date: Fri, 27 Nov 2026 08:00:02 -0800 (PST)
X-Original-Message-ID: ${s.messageId ?? "<ORIG1234@expiry-reminder.example>"}

Final-Recipient: rfc822; ${s.rcpt}
Action: failed
Status: 5.1.1
Remote-MTA: dns; gmail-smtp-in.l.google.com. (2a00:1450:400c:c0b::1b, the server for the domain gmail.com.)
Diagnostic-Code: smtp; 550-5.1.1 The email account that you tried to reach does not exist. Please try
 550-5.1.1 double-checking the recipient's email address for typos or
 550 5.1.1 unnecessary spaces. https://support.google.com/mail/?p=NoSuchUser a1si123 - gsmtp
Last-Attempt-Date: Fri, 27 Nov 2026 08:00:03 -0800 (PST)

--000000000000d9b1a2060b1c2e3f
Content-Type: message/rfc822

${originalHeaders(s)}

Boiler inspection is due on 31/01/2027.
--000000000000d9b1a2060b1c2e3f--
`);

/** Exchange Online's NDR: 5.1.10 RecipientNotFound, a text/html explanation, base64 status part. */
export const outlookHardBounce = (s: Sample) => {
  const status = `Reporting-MTA: dns;AM0PR02MB5634.eurprd02.prod.outlook.com
Received-From-MTA: dns;expiry-reminder.example
Arrival-Date: Fri, 27 Nov 2026 08:00:02 +0000

Original-Recipient: rfc822;${s.rcpt}
Final-Recipient: rfc822;${s.rcpt}
Action: failed
Status: 5.1.10
Diagnostic-Code: smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup
`;
  return crlf(`From: postmaster@outlook.com
To: ${s.bounce}
Date: Fri, 27 Nov 2026 08:00:04 +0000
Content-Type: multipart/report; report-type=delivery-status;
\tboundary="b1fd3a0c-7d4e-4b8e-9a0d-2f6f6ac11c4d"
MIME-Version: 1.0
Message-ID: <b6b8c3e4-5a1d-4c0e-8f3b-ndr@AM0PR02MB5634.eurprd02.prod.outlook.com>
Subject: Undeliverable: Reminder: Boiler inspection is due on 31/01/2027
Auto-Submitted: auto-replied

--b1fd3a0c-7d4e-4b8e-9a0d-2f6f6ac11c4d
Content-Type: multipart/alternative; differences=Content-Type;
\tboundary="0a4e1c2b-1111-4d2c-9b5e-alt"

--0a4e1c2b-1111-4d2c-9b5e-alt
Content-Type: text/plain; charset="us-ascii"
Content-Transfer-Encoding: quoted-printable

Your message to ${s.rcpt} couldn't be delivered.=0D
${s.rcpt.split("@")[0]} wasn't found at ${s.rcpt.split("@")[1]}.

--0a4e1c2b-1111-4d2c-9b5e-alt
Content-Type: text/html; charset="us-ascii"

<html><body><p>Your message to ${s.rcpt} couldn't be delivered.</p></body></html>
--0a4e1c2b-1111-4d2c-9b5e-alt--

--b1fd3a0c-7d4e-4b8e-9a0d-2f6f6ac11c4d
Content-Type: message/delivery-status
Content-Transfer-Encoding: base64

${btoa(status).replace(/(.{76})/g, "$1\n")}

--b1fd3a0c-7d4e-4b8e-9a0d-2f6f6ac11c4d
Content-Type: message/rfc822

${originalHeaders(s)}

Boiler inspection is due on 31/01/2027.

--b1fd3a0c-7d4e-4b8e-9a0d-2f6f6ac11c4d--
`);
};

/** Postfix's bounce: `status` (5.1.1 user unknown, or 4.2.2 mailbox full after its queue lifetime). */
export const postfixBounce = (s: Sample, status = "5.1.1", action = "failed") => {
  const diagnostic = status.startsWith("5")
    ? `smtp; 550 ${status} <${s.rcpt}>: Recipient address rejected: User unknown in local recipient table`
    : `smtp; 452 ${status} <${s.rcpt}>: Mailbox full`;
  return crlf(`Return-Path: <>
Received: by mail.example.net (Postfix) id 3F1A21C0042; Fri, 27 Nov 2026 09:00:05 +0100 (CET)
Date: Fri, 27 Nov 2026 09:00:05 +0100 (CET)
From: MAILER-DAEMON@mail.example.net (Mail Delivery System)
Subject: Undelivered Mail Returned to Sender
To: ${s.bounce}
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
	boundary="3F1A21C0042.1795161605/mail.example.net"
Content-Transfer-Encoding: 7bit
Message-Id: <20261127080005.3F1A21C0042@mail.example.net>

This is a MIME-encapsulated message.

--3F1A21C0042.1795161605/mail.example.net
Content-Description: Notification
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mail.example.net.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

<${s.rcpt}>: host mx.example.org said: ${diagnostic.slice(6)}

--3F1A21C0042.1795161605/mail.example.net
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.example.net
X-Postfix-Queue-ID: 3F1A21C0042
X-Postfix-Sender: rfc822; ${s.bounce}
Arrival-Date: Fri, 27 Nov 2026 09:00:01 +0100 (CET)

Final-Recipient: rfc822; ${s.rcpt}
Original-Recipient: rfc822;${s.rcpt}
Action: ${action}
Status: ${status}
Remote-MTA: dns; mx.example.org
Diagnostic-Code: ${diagnostic}

--3F1A21C0042.1795161605/mail.example.net
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers

${originalHeaders(s)}

--3F1A21C0042.1795161605/mail.example.net--
`);
};

/** Yahoo's complaint feedback loop (ARF, Feedback-Type: abuse), the original whole. */
export const yahooComplaint = (s: Sample, to = s.bounce) =>
  crlf(`From: feedback@arf.mail.yahoo.com
To: ${to}
Subject: FW: Reminder: Boiler inspection is due on 31/01/2027
Date: Fri, 27 Nov 2026 10:12:40 +0000
Message-ID: <1795166360.yahoo.arf.4242@arf.mail.yahoo.com>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="----=_Part_1234_56789.1795166360"

------=_Part_1234_56789.1795166360
Content-Type: text/plain; charset=us-ascii
Content-Transfer-Encoding: 7bit

This is an email abuse report for an email message received from IP 104.30.0.1 on Fri, 27 Nov 2026 08:00:04 +0000

------=_Part_1234_56789.1795166360
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: Yahoo!-Mail-Feedback/2.0
Version: 0.1
Original-Mail-From: <cf-bounce@expiry-reminder.example>
Original-Rcpt-To: <${s.rcpt}>
Received-Date: Fri, 27 Nov 2026 08:00:04 +0000
Reported-Domain: expiry-reminder.example
Authentication-Results: mta1001.mail.bf1.yahoo.com  from=expiry-reminder.example; domainkeys=neutral (no sig);  from=expiry-reminder.example; dkim=pass (ok)

------=_Part_1234_56789.1795166360
Content-Type: message/rfc822
Content-Disposition: inline

${originalHeaders(s)}

Boiler inspection is due on 31/01/2027.

------=_Part_1234_56789.1795166360--
`);

/** AOL's ARF: the recipient redacted (no Original-Rcpt-To), only the original's headers returned. */
export const aolComplaint = (s: Sample, to = "fbl@expiry-reminder.example") =>
  crlf(`From: scomp@aol.net
To: ${to}
Subject: Email Feedback Report for IP 104.30.0.1
Date: Fri, 27 Nov 2026 11:00:00 -0500
Message-ID: <arf-aol-20261127-77@aol.net>
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report;
  boundary="boundary-1795170000"

--boundary-1795170000
Content-Type: text/plain; charset="US-ASCII"

This is an email abuse report for an email message received from IP 104.30.0.1.

--boundary-1795170000
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: AOL SComp
Version: 1
Received-Date: 27 Nov 2026 08:00:04 -0500

--boundary-1795170000
Content-Type: text/rfc822-headers

${originalHeaders({ ...s, rcpt: "redacted@aol.com" })}

--boundary-1795170000--
`);

/** A DSN that reports a success (Action: delivered): nothing to record. */
export const deliveredNotice = (s: Sample) =>
  postfixBounce(s, "2.0.0", "delivered").replace("Mailbox full", "delivered to mailbox");
