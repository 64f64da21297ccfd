import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `users`: An operator, keyed by (issuer, subject), with control's own `usr_` id. */
@Entity({ name: 'users' })
export class User {
  @PrimaryColumn({ name: 'id', type: 'text' })
  id: string;

  @Column({ name: 'issuer', type: 'text' })
  issuer: string;

  @Column({ name: 'subject', type: 'text' })
  subject: string;

  @Column({ name: 'email', type: 'text', nullable: true })
  email: string | null;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
